import sys
from pathlib import Path

# The package from this source tree (python/loom), over the library of LOOM_LIBRARY or build/.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

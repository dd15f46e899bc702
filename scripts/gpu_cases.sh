# On the GPU machine (repo root, .device unpacked): `loom run --batch CASES` once, against the
# float64 reference; prints how many results of each kind, then the ones not ok (at most 10).
#   bash scripts/gpu_cases.sh bench/cases/padded_rows.txt
set -u
out=$(LD_LIBRARY_PATH=$PWD/.device/lib .device/bin/loom run --batch "$1" 2>&1 | grep -E "== result")
echo "$out" | sed 's/result [0-9]*: //' | sort | uniq -c
echo "$out" | grep -v ": ok" | head

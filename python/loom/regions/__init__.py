"""A framework's op graph cut into loom fusions. `graph` is the graph the cutting reads (no
framework imported: loom.torch's backend fills it from an FX graph, a test by hand), `ops` the one
table of framework ops loom takes, `partition` the regions (acyclic, each one loom fusion) and
why each node left outside stays there, `lower` a region's loom text."""
from .extent import Extent
from .graph import Graph, Node, Sym, TensorType, tensor_type
from .partition import Plan, partition, support
from .lower import RegionFusion
from .emit import Unsupported

__all__ = ["Extent", "Graph", "Node", "Sym", "TensorType", "tensor_type", "Plan", "partition", "support",
           "RegionFusion", "Unsupported"]

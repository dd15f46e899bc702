"""The one table of the framework ops loom takes: op name -> the function that writes it into a
region's fusion. What is not here stays with the framework."""
from . import aten_pointwise, aten_shapes

TABLE = {**aten_pointwise.table(), **aten_shapes.table()}

# Ops that move no data of their own: a region does not end at one (its source is the output) or
# consist of them alone.
NON_COMPUTE = aten_shapes.VIEWS | aten_pointwise.IDENTITIES | {"getitem"}
CREATIONS = aten_shapes.CREATIONS

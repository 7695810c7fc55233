"""The MxNxK[,MxNxK...] shape lists the benchmark scripts take (argparse type)."""
import argparse


def parse_shapes(text):
    """'4096x4096x4096,16x4096x4096' -> [(4096, 4096, 4096), (16, 4096, 4096)]; each dimension >= 1."""
    shapes = []
    for item in text.split(","):
        dims = item.strip().split("x")
        if len(dims) != 3 or not all(d.isdigit() and int(d) > 0 for d in dims):
            raise argparse.ArgumentTypeError(f"bad shape '{item}' (want MxNxK)")
        shapes.append(tuple(int(d) for d in dims))
    if not shapes:
        raise argparse.ArgumentTypeError("no shapes")
    return shapes

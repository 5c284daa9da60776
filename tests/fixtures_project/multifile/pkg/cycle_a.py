from .cycle_b import pong


def ping(n):
    return pong(n)

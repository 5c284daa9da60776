from .cycle_a import ping


def pong(n):
    return ping(n)

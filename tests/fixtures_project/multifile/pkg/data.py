import torch

from . import models
from .models import Net


def make_batch(n=4):
    return torch.zeros(n, 3)


def make_model():
    return Net()


def make_deep():
    return models.Deep().float()


def either(flag):
    if flag:
        return torch.zeros(3)
    return Net()


def make_dict():
    return {"x": torch.zeros(3)}


def passthrough(x):
    return x


def countdown(n):
    if n:
        return countdown(n - 1)
    return torch.ones(n)


BATCH = torch.ones(2)

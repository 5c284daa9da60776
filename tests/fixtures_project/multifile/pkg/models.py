import torch

from .base import Base, NotAModule


class Net(Base):  # an nn.Module through pkg/base.py
    pass


class Deep(Net):  # two project files down to nn.Module
    pass


class Plain(NotAModule):
    pass


class WithTable(Net):
    def __init__(self):
        super().__init__()
        self.table = torch.zeros(3)  # a plain tensor attribute: Module.to() does not move it

    def cuda(self, device=None):
        self.table = self.table.cuda(device)
        return super().cuda(device)


class Inherits(WithTable):  # inherits the override
    pass


class OnlySuper(Net):
    def cuda(self, device=None):
        return super().cuda(device)


def make_batch(n=4):
    x = torch.randn(n, 3)
    return x.float()

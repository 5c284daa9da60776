"""A script beside the package: `pkg` is found from the project root (pyproject.toml)."""
import torch
from pkg.data import make_batch
from pkg.models import Net, WithTable

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Local(WithTable):  # a class of this file built on a project class that overrides cuda()
    pass


class Wrapper(Net):
    def move(self):
        self.to(device)  # self is a module


x = make_batch()
x.to(device)  # error: DL003
model = Local().cuda()  # error: DL001
other = Net().cuda()  # error: DL001

import torch.nn as nn


class Base(nn.Module):
    def forward(self, x):
        return x


class NotAModule:
    def to(self, device):
        return self

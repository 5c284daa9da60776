import torch

import pkg.models as m
from pkg import PublicNet
from pkg.data import make_batch as batch_of, BATCH, countdown
from pkg.models import Net as N

from . import data, models
from .cycle_a import ping
from .data import either, make_deep, make_dict, make_model, passthrough
from .models import Deep, Inherits, OnlySuper, Plain, WithTable

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def modules():
    net = N()
    net.to(device)  # a module (pkg/models.py Net -> pkg/base.py Base -> nn.Module): moved in place
    deep = Deep()
    deep.to(device)
    via_module = m.Net()
    via_module.to(device)
    relative = models.Deep()
    relative.to(device)
    exported = PublicNet()
    exported.to(device)
    built = make_model()
    built.to(device)
    make_deep().to(device)
    plain = Plain()  # neither a module nor a tensor: unknown
    plain.to(device)


def tensors():
    batch = batch_of()
    batch.to(device)  # error: DL003
    made = data.make_batch()  # (a held value: a bare call's result is a temporary, not a DL003 finding)
    made.to(device)  # error: DL003
    also = m.make_batch()
    also.to(device)  # error: DL003
    counted = countdown(3)
    counted.to(device)  # error: DL003
    BATCH.to(device)  # a tensor (pkg/data.py), but a name bound by an import: DL003 leaves those alone


def unknowns():
    either(True).to(device)  # a tensor or a module: unknown
    make_dict().to(device)
    passthrough(torch.zeros(2)).to(device)  # returns its parameter: unknown
    ping(3).to(device)  # pkg/cycle_a.py and pkg/cycle_b.py call each other: unknown, and it ends


def shadowed(load):
    batch_of = load  # no longer the project's function here
    x = batch_of()
    x.to(device)


def overrides():
    a = WithTable().cuda()  # error: DL001
    b = Inherits()
    b = b.cuda()  # error: DL001
    c = OnlySuper().cuda()  # error: DL001
    d = Deep().cuda()  # error: DL001
    return a, b, c, d

"""The virtual GPU answers as an H100 did (shared/DOMAIN.md, "Which CPU/CUDA mixes a GPU allows")."""

from __future__ import annotations

import copy
import io

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

from devlint.virtual_gpu import device_error_info, virtual_gpu  # noqa: E402

SAME = "Expected all tensors to be on the same device"
NUMPY = "can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first."


def _env():
    g = torch.tensor([1.0, -2.0, 3.0], device="cuda")
    c = torch.tensor([1.0, 2.0, 3.0])
    return {
        "g": g, "c": c,
        "s": torch.tensor(2.0),                      # 0-dim CPU tensor
        "gs": torch.tensor(2.0, device="cuda"),      # 0-dim CUDA tensor
        "g2": torch.ones(2, 3, device="cuda"), "c2": torch.ones(2, 3),
        "g3": torch.ones(2, 3, 3, device="cuda"), "c3": torch.ones(2, 3, 3),
        "ci": torch.tensor([0, 2]), "gi": torch.tensor([0, 2], device="cuda"),
        "cmask": torch.tensor([True, False, True]),
        "lin": torch.nn.Linear(3, 2).cuda(),
        "emb": torch.nn.Embedding(4, 2).cuda(),
        "gp": torch.nn.Parameter(torch.ones(3, device="cuda")),
    }


def _set_grad(e):
    e["gp"].grad = torch.ones(3)


def _setitem(t, i, v):
    t[i] = v


def _asarray(e):
    np = pytest.importorskip("numpy")
    return np.asarray(e["g"])


# (id, operation, None when the GPU allows it, else (exception type, text in the message))
CASES = [
    # mixes that raise "Expected all tensors to be on the same device"
    ("add", lambda e: e["g"] + e["c"], (RuntimeError, SAME)),
    ("eq", lambda e: e["g"] == e["c"], (RuntimeError, SAME)),
    ("max", lambda e: torch.max(e["g"], e["c"]), (RuntimeError, SAME)),
    ("where", lambda e: torch.where(e["g"] > 0, e["g"], e["c"]), (RuntimeError, SAME)),
    ("mse_loss", lambda e: F.mse_loss(e["g"], e["c"]), (RuntimeError, SAME)),
    ("matmul", lambda e: e["g"] @ e["c"], (RuntimeError, SAME)),
    ("bmm", lambda e: torch.bmm(e["g3"], e["c3"]), (RuntimeError, SAME)),
    ("einsum", lambda e: torch.einsum("i,i->", e["g"], e["c"]), (RuntimeError, SAME)),
    ("linear", lambda e: F.linear(e["c2"], e["g2"]), (RuntimeError, SAME)),
    ("nn_linear", lambda e: e["lin"](e["c2"]), (RuntimeError, SAME)),
    ("cat", lambda e: torch.cat([e["g"], e["c"]]), (RuntimeError, SAME)),
    ("stack", lambda e: torch.stack([e["g"], e["c"]]), (RuntimeError, SAME)),
    ("equal", lambda e: torch.equal(e["g"], e["c"]), (RuntimeError, SAME)),
    ("allclose", lambda e: torch.allclose(e["g"], e["c"]), (RuntimeError, SAME)),
    ("cross_entropy_cpu_target", lambda e: F.cross_entropy(e["g2"], torch.tensor([0, 1])), (RuntimeError, SAME)),
    ("index_select", lambda e: torch.index_select(e["g"], 0, e["ci"]), (RuntimeError, SAME)),
    ("gather", lambda e: torch.gather(e["g"], 0, e["ci"]), (RuntimeError, SAME)),
    ("embedding_cpu_indices", lambda e: e["emb"](torch.tensor([0, 1])), (RuntimeError, SAME)),
    ("add_inplace", lambda e: e["g"].add_(e["c"]), (RuntimeError, SAME)),
    ("clamp_0dim_cpu_min", lambda e: torch.clamp(e["g"], min=e["s"]), (RuntimeError, SAME)),
    ("cpu_plus_0dim_cuda", lambda e: e["c"] + e["gs"], (RuntimeError, SAME)),
    ("masked_fill_cpu_mask", lambda e: e["g"].masked_fill(e["cmask"], 0.0),
     (RuntimeError, "expected self and mask to be on the same device")),
    ("cpu_indexed_by_cuda", lambda e: e["c"][e["gi"]],
     (RuntimeError, "indices should be either on cpu or on the same device as the indexed tensor")),
    ("cpu_grad_on_cuda_param", _set_grad,
     (RuntimeError, "attempting to assign a gradient with device type 'cpu' to a tensor with device type 'cuda'")),
    ("numpy", lambda e: e["g"].numpy(), (TypeError, NUMPY)),
    ("numpy_asarray", _asarray, (TypeError, NUMPY)),
    ("device_of_cpu_get_device", lambda e: torch.ones(1, device=e["c"].get_device()),
     (RuntimeError, "Device index must not be negative")),
    ("cuda1_on_one_gpu", lambda e: torch.ones(1, device="cuda:1"), (RuntimeError, "CUDA error: invalid device ordinal")),
    ("set_device_1_on_one_gpu", lambda e: torch.cuda.set_device(1), (RuntimeError, "CUDA error: invalid device ordinal")),
    ("data_parallel_bad_id", lambda e: torch.nn.DataParallel(e["lin"], device_ids=[0, 1]),
     (AssertionError, "Invalid device id")),
    # mixes a GPU allows
    ("cuda_plus_0dim_cpu", lambda e: e["g"] + e["s"], None),
    ("add_inplace_0dim_cpu", lambda e: e["g"].add_(e["s"]), None),
    ("where_0dim_cpu", lambda e: torch.where(e["g"] > 0, e["g"], e["s"]), None),
    ("python_scalar", lambda e: e["g"] * 2 + 1.5, None),
    ("index_cuda_by_cpu_long", lambda e: e["g"][e["ci"]], None),
    ("index_cuda_by_cpu_mask", lambda e: e["g"][e["cmask"]], None),
    ("setitem_cpu_into_cuda", lambda e: _setitem(e["g"], 0, e["c"][0]), None),
    ("setitem_cuda_into_cpu", lambda e: _setitem(e["c"], 0, e["g"][0]), None),
    ("copy_cpu_to_cuda", lambda e: e["g"].copy_(e["c"]), None),
    ("copy_cuda_to_cpu", lambda e: e["c"].copy_(e["g"]), None),
    ("item", lambda e: e["g"][0].item(), None),
    ("tolist", lambda e: e["g"].tolist(), None),
    ("float", lambda e: float(e["g"][1]), None),
]


@pytest.mark.parametrize("op,expected", [pytest.param(op, exp, id=name) for name, op, exp in CASES])
def test_mix_as_on_h100(op, expected):
    with virtual_gpu(devices=1):
        env = _env()
        if expected is None:
            op(env)
            return
        exc_type, text = expected
        with pytest.raises(exc_type) as info:
            op(env)
        assert text in str(info.value)
        if text == SAME:
            assert "cuda:0" in str(info.value) and "cpu" in str(info.value)
        assert device_error_info(info.value) is not None or exc_type is AssertionError


def test_gpu_answers():
    with virtual_gpu():
        g = torch.zeros(2, device="cuda")
        c = torch.zeros(2)
        assert g.device == torch.device("cuda", 0) and str(g.device) == "cuda:0"
        assert g.is_cuda and not c.is_cuda
        assert g.get_device() == 0 and c.get_device() == -1
        assert torch.device("cuda").index is None
        assert g.to("cuda") is g and g.cuda() is g and g.to("cuda:0") is g
        assert torch.cuda.is_available() and torch.cuda.device_count() == 1
        assert torch.cuda.current_device() == 0
        torch.cuda.synchronize()
        assert torch.accelerator.is_available()
        assert torch.accelerator.current_accelerator() == torch.device("cuda")
        assert "device='cuda:0'" in repr(g)
    assert not torch.cuda.is_available()  # restored


def test_moves_make_new_tensors_and_keep_values():
    with virtual_gpu():
        c = torch.arange(3.0)
        g = c.cuda()
        assert g is not c and g.device.type == "cuda" and c.device.type == "cpu"
        assert c.to("cuda").is_cuda and c.to(0).is_cuda and c.to(device="cuda").is_cuda
        assert c.to(torch.device("cuda:0"), torch.float64).dtype == torch.float64
        assert c.to(g).is_cuda
        assert c.to("cuda", non_blocking=True).is_cuda
        back = g.cpu()
        assert not back.is_cuda and back.tolist() == [0.0, 1.0, 2.0]
        assert g.to(torch.float16).is_cuda  # dtype-only moves stay on the device
        assert g.double().is_cuda and g.float().is_cuda
        assert torch.zeros_like(g).is_cuda and g.new_zeros(2).is_cuda
        assert (g * 2).tolist() == [0.0, 2.0, 4.0]
        pinned = c.pin_memory()
        assert pinned.is_cuda is False and pinned.is_pinned() and not c.is_pinned()
        assert pinned.cuda(non_blocking=True).is_cuda
        assert c.to(None) is c


def test_two_devices():
    with virtual_gpu(devices=2):
        a = torch.ones(2, device="cuda:0")
        b = torch.ones(2, device="cuda:1")
        assert b.get_device() == 1 and a.cuda(1).get_device() == 1
        with pytest.raises(RuntimeError, match="cuda:0 and cuda:1"):
            a + b
        torch.cuda.set_device(1)
        assert torch.ones(1, device="cuda").get_device() == 1
        assert torch.cuda.current_device() == 1


def test_modules_parameters_buffers():
    class WithPlainAttribute(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(2, 2)
            self.register_buffer("scale", torch.ones(2))
            self.mask = torch.ones(2)  # a plain attribute: does not follow the module

        def forward(self, x):
            return self.lin(x) * self.scale * self.mask

    with virtual_gpu():
        m = WithPlainAttribute()
        assert m.cuda() is m and m.to("cuda") is m
        assert next(m.parameters()).device.type == "cuda" and m.scale.is_cuda
        assert not m.mask.is_cuda
        x = torch.ones(1, 2, device="cuda")
        with pytest.raises(RuntimeError, match=SAME):
            m(x)
        m.mask = m.mask.cuda()
        assert m(x).is_cuda
        p = torch.nn.Parameter(torch.zeros(2, device="cuda"))
        assert isinstance(p, torch.nn.Parameter) and p.is_cuda
        assert m.cpu() is m and not m.lin.weight.is_cuda


def test_training_loop_with_optimiser():
    with virtual_gpu():
        model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1)).cuda()
        for opt in (torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
                    torch.optim.Adam(model.parameters(), lr=0.01)):
            for _ in range(3):
                x = torch.randn(5, 4).cuda()
                y = torch.randn(5, 1, device="cuda")
                loss = F.mse_loss(model(x), y)
                opt.zero_grad()
                loss.backward()
                assert torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0).is_cuda
                opt.step()
            assert model[0].weight.grad.is_cuda and model[0].weight.is_cuda
            state = copy.deepcopy(opt.state_dict())
            opt.load_state_dict(state)  # state goes back to the parameters' device
            assert all(v.is_cuda for s in opt.state.values() for k, v in s.items()
                       if isinstance(v, torch.Tensor) and k != "step")
        with pytest.raises(RuntimeError, match=SAME):
            model(torch.randn(5, 4))


def test_save_and_load():
    buf = io.BytesIO()
    with virtual_gpu():
        torch.save({"w": torch.ones(2, device="cuda"), "c": torch.ones(2)}, buf)
        for ml, w_cuda, c_cuda in [(None, True, False), ("cpu", False, False), (torch.device("cpu"), False, False),
                                   ("cuda", True, True), ({"cuda:0": "cpu"}, False, False),
                                   ({"cpu": "cuda:0"}, True, True), (lambda s, loc: s, False, False),
                                   ]:
            buf.seek(0)
            sd = torch.load(buf, map_location=ml) if ml is not None else torch.load(buf)
            assert (sd["w"].is_cuda, sd["c"].is_cuda) == (w_cuda, c_cuda), ml
        buf.seek(0)
        sd = torch.load(buf, "cpu")  # map_location as second positional argument
        assert not sd["w"].is_cuda
        cpu_file = io.BytesIO()
        torch.save(torch.arange(3.0), cpu_file)
        cpu_file.seek(0)
        t = torch.load(cpu_file, map_location="cuda")
        with pytest.raises(TypeError, match="can't convert cuda:0 device type tensor to numpy"):
            t.numpy()
    # With CUDA hidden (the plain CPU build), the checkpoint remembers its GPU.
    buf.seek(0)
    with pytest.raises(RuntimeError, match="Attempting to deserialize object on a CUDA device"):
        torch.load(buf)
    buf.seek(0)
    assert torch.load(buf, map_location="cpu")["w"].tolist() == [1.0, 1.0]


def test_cuda_hidden_and_legacy_types():
    with virtual_gpu(devices=0):
        assert not torch.cuda.is_available()
        with pytest.raises(RuntimeError, match="No CUDA GPUs are available"):
            torch.zeros(1).cuda()
        with pytest.raises(RuntimeError, match="No CUDA GPUs are available"):
            torch.cuda.current_device()
        with pytest.raises(RuntimeError, match="No CUDA GPUs are available"):
            torch.cuda.FloatTensor(2)
        assert torch.cuda.memory_allocated() == 0
        torch.cuda.empty_cache()
        assert torch.device("cuda").type == "cuda"
        with pytest.warns(UserWarning):
            assert not torch.amp.GradScaler("cuda").is_enabled()
    with virtual_gpu():
        t = torch.cuda.LongTensor([1, 2])
        assert t.is_cuda and t.dtype == torch.int64 and isinstance(t, torch.cuda.LongTensor)
        assert t.type() == "torch.cuda.LongTensor"
        assert torch.zeros(2).type("torch.cuda.FloatTensor").is_cuda
        assert torch.cuda.FloatTensor(2, 3).shape == (2, 3)
        assert torch.cuda.memory_allocated() > 0


def test_cuda_visible_devices_empty_hides(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    with virtual_gpu(devices=2):
        assert torch.cuda.device_count() == 0 and not torch.cuda.is_available()


def test_events_time_on_cpu_clock():
    with virtual_gpu():
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch.ones(100, device="cuda").sum()
        end.record()
        torch.cuda.synchronize()
        assert start.elapsed_time(end) >= 0.0


def test_devlint_does_not_import_torch():
    import subprocess
    import sys
    code = "import sys, devlint.cli, devlint.engine; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_cuda_visible_devices_timing(monkeypatch):
    # Set before any CUDA query: hides the GPU.
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    with virtual_gpu():
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
        assert not torch.cuda.is_available()
    # Set after is_available(): ignored for allocation, though device_count() then reports 0.
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    with virtual_gpu():
        assert torch.cuda.is_available()
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
        assert torch.ones(1, device="cuda").device == torch.device("cuda", 0)
        assert torch.cuda.device_count() == 0
    # Set after only device_count(): still takes effect.
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    with virtual_gpu():
        assert torch.cuda.device_count() == 1
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
        assert not torch.cuda.is_available()


def test_autocast_and_grad_scaler():
    with virtual_gpu():
        m = torch.nn.Linear(4, 2).cuda()
        x = torch.randn(3, 4, device="cuda")
        with torch.autocast("cuda"):
            y = m(x)
            assert (x @ x.T).dtype == torch.float16
        assert y.dtype == torch.float16 and y.is_cuda
        assert m(x).dtype == torch.float32
        net = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.BatchNorm2d(2), torch.nn.Flatten(),
                                  torch.nn.Linear(8, 3)).cuda()
        with torch.autocast("cuda"):
            out = net(torch.randn(2, 1, 4, 4, device="cuda"))  # float16 activations meet float32 parameters
            assert out.dtype == torch.float16
            assert F.cross_entropy(out, torch.tensor([0, 1], device="cuda")).dtype == torch.float32
            assert torch.softmax(out, 1).dtype == torch.float32
        scaler = torch.amp.GradScaler("cuda")
        assert scaler.is_enabled() and scaler.get_scale() == 65536.0
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        scaler.scale(m(x).sum()).backward()
        scaler.step(opt)
        scaler.update()


def test_data_parallel_over_two_virtual_devices():
    torch.manual_seed(0)
    with virtual_gpu(devices=2):
        m = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 1)).cuda()
        x = torch.randn(6, 4, device="cuda")
        m(x).sum().backward()
        expected = m[0].weight.grad.clone()
        m.zero_grad()
        y = torch.nn.DataParallel(m)(x)
        assert y.device == torch.device("cuda", 0) and y.shape == (6, 1)
        y.sum().backward()
        assert m[0].weight.grad.is_cuda
        assert torch.allclose(m[0].weight.grad.cpu(), expected.cpu(), atol=1e-6)


def test_common_idioms():
    with virtual_gpu():
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        x = torch.randn(4, 3, device=device)
        assert f"{x[:1]}".endswith("device='cuda:0')")
        assert torch.arange(3, device=x.device).is_cuda
        assert all(t.is_cuda for t in x.max(dim=0)) and all(t.is_cuda for t in x.split(2))
        assert x.T.is_cuda and x.data.is_cuda and x.detach().is_cuda and (x > 0).nonzero().is_cuda
        torch.cuda.manual_seed_all(0)
        torch.cuda.manual_seed(0)
        gen = torch.Generator(device="cuda")
        gen.manual_seed(0)
        assert gen.device == torch.device("cuda", 0) and isinstance(gen, torch.Generator)
        assert isinstance(torch.default_generator, torch.Generator)
        assert torch.randn(2, device="cuda", generator=gen).is_cuda
        torch.set_default_device("cuda")
        try:
            assert torch.zeros(2).is_cuda
        finally:
            torch.set_default_device("cpu")
        assert not torch.zeros(2).is_cuda
        ds = torch.utils.data.TensorDataset(torch.randn(8, 3), torch.randn(8))
        for xb, _ in torch.utils.data.DataLoader(ds, batch_size=4, pin_memory=True):
            assert not xb.is_cuda and xb.to(device, non_blocking=True).is_cuda
        import copy
        m = torch.nn.Linear(2, 2).to(device)
        assert next(copy.deepcopy(m).parameters()).is_cuda
        bn = copy.deepcopy(torch.nn.BatchNorm1d(3).cuda())
        assert bn.running_mean.is_cuda and copy.deepcopy(x).is_cuda
        m.load_state_dict(torch.nn.Linear(2, 2).state_dict())  # copies into the parameters' own device
        assert m.weight.is_cuda


def test_cuda_override_moving_a_plain_attribute():
    # DOMAIN.md: module.cuda() calls the class's own cuda(); module.to(device) does not (seen on an H100).
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(2, 2)
            self.mask = torch.ones(2)

        def cuda(self, device=None):
            self.mask = self.mask.cuda(device)
            return super().cuda(device)

        def forward(self, x):
            return self.lin(x) * self.mask

    with virtual_gpu():
        x = torch.ones(1, 2, device="cuda")
        assert Net().cuda()(x).is_cuda
        with pytest.raises(RuntimeError, match=SAME):
            Net().to(torch.device("cuda"))(x)


def test_host_arguments_a_gpu_takes_on_the_cpu():
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

    with virtual_gpu():
        x = torch.randn(3, 5, 2, device="cuda")
        packed = pack_padded_sequence(x, torch.tensor([5, 3, 2]), batch_first=True)  # lengths on the CPU
        assert packed.data.is_cuda and not packed.batch_sizes.is_cuda
        for rnn in (torch.nn.LSTM(2, 4, batch_first=True), torch.nn.GRU(2, 4, batch_first=True)):
            out, _ = rnn.cuda()(packed)
            padded, lengths = pad_packed_sequence(out, batch_first=True)
            assert padded.is_cuda and not lengths.is_cuda
        with pytest.raises(RuntimeError, match=SAME):  # but a CPU hidden state is a mix
            torch.nn.GRU(2, 4).cuda()(torch.randn(5, 3, 2, device="cuda"), torch.zeros(1, 3, 4))
        with pytest.raises(RuntimeError, match=SAME):  # an LSTM's state is a tuple (h0, c0): a mix too
            torch.nn.LSTM(2, 4).cuda()(torch.randn(5, 3, 2, device="cuda"), (torch.zeros(1, 3, 4), torch.zeros(1, 3, 4)))
        log_probs = torch.randn(6, 2, 4, device="cuda").log_softmax(2)
        loss = F.ctc_loss(log_probs, torch.tensor([[1, 2], [1, 1]]), torch.tensor([6, 6]), torch.tensor([2, 2]))
        assert loss.is_cuda


def test_single_process_distributed_data_parallel(tmp_path):
    dist = pytest.importorskip("torch.distributed")
    if not dist.is_available() or not dist.is_gloo_available():
        pytest.skip("torch.distributed with gloo is not available")
    with virtual_gpu():
        dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
        try:
            m = torch.nn.Linear(4, 2).cuda()
            ddp = torch.nn.parallel.DistributedDataParallel(m, device_ids=[0])
            y = ddp(torch.randn(3, 4, device="cuda"))
            assert y.is_cuda
            y.sum().backward()
            assert m.weight.grad.is_cuda
            assert ddp(torch.randn(3, 4)).is_cuda  # DDP moves CPU inputs to device_ids[0], as on a GPU
        finally:
            dist.destroy_process_group()


def test_a_variable_of_pytorch_0_3_code_is_on_the_device_of_its_tensor():
    from torch.autograd import Variable

    with virtual_gpu():
        x = torch.zeros(2, device="cuda")
        assert Variable(x).device == x.device and Variable(x, requires_grad=True).requires_grad
        assert Variable(torch.zeros(2)).device == torch.device("cpu")
        # so a loss of two Variables on the device is no mixed-device error
        assert torch.nn.functional.mse_loss(Variable(x), Variable(x + 1)).is_cuda


def test_data_parallel_copies_a_cpu_input_to_the_devices():
    torch.manual_seed(0)
    with virtual_gpu():
        m = torch.nn.Linear(4, 1).cuda()
        x = torch.randn(6, 4)
        expected = m(x.cuda())
        y = torch.nn.DataParallel(m)(x)  # a GPU copies it on background streams
        assert y.is_cuda and torch.equal(y.cpu(), expected.cpu())

#!/usr/bin/env python3
"""Export real network architectures to ONNX (opset 17) for bdc's real-model tests.

Usage: export_models.py OUTDIR [NAME ...]   (no NAME: every model but HEAVY's; --list: print
                                             those names; --list-all: every name)

Writes OUTDIR/NAME.onnx plus one sample input per graph input, in graph-input order:
NAME.input.npy (first input), NAME.input.1.npy, NAME.input.2.npy, ... A model whose .onnx
already exists is skipped (the folder is a cache); files are written under a temporary name
and renamed, the .onnx last, so an interrupted run never leaves a half-written model behind.

Why the weights are re-randomised: torchvision's initialisers zero some biases, classifier
heads and last-BN gammas, and a fresh BatchNorm has running stats 0/1, so an untrained model
can have all-zero or degenerate outputs that hide numerical bugs. Every Conv/Linear/Embedding/
norm parameter gets a fixed-seed random value, and BatchNorm running statistics are measured on
a random batch (so activations stay well scaled through deep nets) and then perturbed (so the
BN fold is not an identity). Everything is deterministic: torch.manual_seed per model.

Shapes are static (batch 1, no dynamic_axes), except in DYNAMIC_MODELS, which are exported
with symbolic dimensions and only when named; exporter constant folding is left at its default,
so the Shape->Gather->Concat->Reshape chains tracing records remain for bdc to fold.

Uses only torch/torchvision (Debian's) and numpy. Torch is never handed numpy arrays: Debian's
torch may be built against a different numpy major version than the one installed from PyPI,
so arrays cross between them as raw bytes.
"""

import inspect
import math
import os
import sys
import tempfile
import time
import warnings
import zlib


def _import_torch_quietly():
    """Import torch/torchvision, hiding the numpy-ABI-mismatch banner they print when torch
    was built against numpy 1.x and numpy 2.x is installed (harmless here, see above)."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as cap:
        os.dup2(cap.fileno(), 2)
        try:
            import torch  # noqa: F401
            import torchvision  # noqa: F401
            err = None
        except BaseException as e:  # re-raised below with the captured text shown
            err = e
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
        cap.seek(0)
        text = cap.read().decode(errors="replace")
    if err is not None:
        sys.stderr.write(text)
        raise err
    if text.strip() and "NumPy" not in text:
        sys.stderr.write(text)


_import_torch_quietly()
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import torchvision  # noqa: E402

# Tracing chatter (TracerWarning on Python-side asserts, exporter notes on LSTM batch sizes and
# prim::Constant shape inference) is expected for these models and would bury the result lines.
warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
warnings.filterwarnings("ignore", category=UserWarning, module=r"torch\.onnx")

OPSET = 17
# PyTorch 2.9 and later export through torch.export (dynamo=True) unless told otherwise, with
# other graphs and opsets; every export here takes the TorchScript exporter, as older releases
# (which have no such keyword) do by default.
TORCHSCRIPT_EXPORTER = ({"dynamo": False}
                        if "dynamo" in inspect.signature(torch.onnx.export).parameters else {})
IMAGE_SHAPE = (1, 3, 224, 224)


# ---------------------------------------------------------------------------------------------
# Hand-written transformer models (torch.nn parts only)
# ---------------------------------------------------------------------------------------------

class BertLayer(nn.Module):
    """Post-LayerNorm encoder layer; attention written as explicit MatMul/Softmax."""

    def __init__(self, hidden, heads, ffn):
        super().__init__()
        self.heads, self.head_dim = heads, hidden // heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.attn_out = nn.Linear(hidden, hidden)
        self.attn_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.ffn_in = nn.Linear(hidden, ffn)
        self.act = nn.GELU()  # exact (erf) form
        self.ffn_out = nn.Linear(ffn, hidden)
        self.ffn_norm = nn.LayerNorm(hidden, eps=1e-12)

    def split_heads(self, x):
        b, t, _ = x.size()
        return x.view(b, t, self.heads, self.head_dim).permute(0, 2, 1, 3)

    def forward(self, x, mask_bias):
        b, t, h = x.size()
        q = self.split_heads(self.query(x))
        k = self.split_heads(self.key(x))
        v = self.split_heads(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        probs = torch.softmax(scores + mask_bias, dim=-1)
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).reshape(b, t, h)
        x = self.attn_norm(x + self.attn_out(ctx))
        return self.ffn_norm(x + self.ffn_out(self.act(self.ffn_in(x))))


class BertEncoder(nn.Module):
    """BERT-shaped encoder: word + position + segment embeddings, N post-LN layers, pooler."""

    def __init__(self, vocab=4096, hidden=256, layers=4, heads=4, ffn=1024, max_pos=512):
        super().__init__()
        self.word = nn.Embedding(vocab, hidden)
        self.position = nn.Embedding(max_pos, hidden)
        self.segment = nn.Embedding(2, hidden)
        self.emb_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.layers = nn.ModuleList(BertLayer(hidden, heads, ffn) for _ in range(layers))
        self.pooler = nn.Linear(hidden, hidden)
        self.register_buffer("position_ids", torch.arange(max_pos).unsqueeze(0))
        self.register_buffer("segment_ids", torch.zeros(1, max_pos, dtype=torch.long))

    def forward(self, input_ids, attention_mask):
        t = input_ids.size(1)
        x = (self.word(input_ids) + self.position(self.position_ids[:, :t])
             + self.segment(self.segment_ids[:, :t]))
        x = self.emb_norm(x)
        # 1 = attend, 0 = padding -> additive bias 0 / -10000 broadcast over heads and queries
        mask_bias = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * -10000.0
        for layer in self.layers:
            x = layer(x, mask_bias)
        pooled = torch.tanh(self.pooler(x[:, 0]))
        return x, pooled


def gelu_tanh(x):
    """GPT-2's GELU, tanh approximation, written out so the exporter decomposes it."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class GPT2Block(nn.Module):
    """Pre-LayerNorm decoder block with a causal mask from a registered tril buffer."""

    def __init__(self, hidden, heads, n_ctx):
        super().__init__()
        self.heads, self.head_dim, self.hidden = heads, hidden // heads, hidden
        self.ln_1 = nn.LayerNorm(hidden)
        self.c_attn = nn.Linear(hidden, 3 * hidden)
        self.c_proj = nn.Linear(hidden, hidden)
        self.ln_2 = nn.LayerNorm(hidden)
        self.c_fc = nn.Linear(hidden, 4 * hidden)
        self.mlp_proj = nn.Linear(4 * hidden, hidden)
        self.register_buffer("bias", torch.tril(torch.ones(n_ctx, n_ctx)).view(1, 1, n_ctx, n_ctx))

    def attention(self, x):
        b, t, c = x.size()
        q, k, v = self.c_attn(x).split(self.hidden, dim=2)
        q = q.view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k = k.view(b, t, self.heads, self.head_dim).transpose(1, 2)
        v = v.view(b, t, self.heads, self.head_dim).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.head_dim))
        att = att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        return self.c_proj(y)

    def forward(self, x):
        x = x + self.attention(self.ln_1(x))
        return x + self.mlp_proj(gelu_tanh(self.c_fc(self.ln_2(x))))


class GPT2(nn.Module):
    """GPT-2-shaped decoder: token + position embeddings, N blocks, final LN, tied LM head."""

    def __init__(self, vocab=4096, hidden=256, layers=4, heads=4, n_ctx=128):
        super().__init__()
        self.wte = nn.Embedding(vocab, hidden)
        self.wpe = nn.Embedding(n_ctx, hidden)
        self.blocks = nn.ModuleList(GPT2Block(hidden, heads, n_ctx) for _ in range(layers))
        self.ln_f = nn.LayerNorm(hidden)

    def forward(self, input_ids):
        t = input_ids.size(1)
        pos = torch.arange(0, t, dtype=torch.long).unsqueeze(0)
        x = self.wte(input_ids) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        return F.linear(self.ln_f(x), self.wte.weight)  # head tied to the token embedding


class LSTMModel(nn.Module):
    """2-layer LSTM (seq-first) followed by a Linear on every time step."""

    def __init__(self, input_size=32, hidden=64, layers=2, classes=10):
        super().__init__()
        self.lstm = nn.LSTM(input_size, hidden, num_layers=layers, batch_first=False)
        self.fc = nn.Linear(hidden, classes)

    def forward(self, x):
        y, (h, c) = self.lstm(x)
        return self.fc(y), h, c


class UNet(nn.Module):
    """Small U-Net for segmentation: conv-BN-ReLU pairs, MaxPool down, ConvTranspose2d (and one
    bilinear Upsample) up, skip connections joined by Concat, 1x1 conv to per-pixel logits."""

    @staticmethod
    def double_conv(cin, cout):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout),
                             nn.ReLU(inplace=True),
                             nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout),
                             nn.ReLU(inplace=True))

    def __init__(self, cin=3, classes=4, width=16):
        super().__init__()
        w = [width, 2 * width, 4 * width, 8 * width]
        self.enc = nn.ModuleList([self.double_conv(cin, w[0]), self.double_conv(w[0], w[1]),
                                  self.double_conv(w[1], w[2])])
        self.pool = nn.MaxPool2d(2)
        self.bottleneck = self.double_conv(w[2], w[3])
        self.up = nn.ModuleList([nn.ConvTranspose2d(w[3], w[2], 2, stride=2),
                                 nn.ConvTranspose2d(w[2], w[1], 2, stride=2)])
        # the last step upsamples (bilinear) then convolves, the other common decoder form
        self.up_last = nn.Sequential(nn.Upsample(scale_factor=2, mode="bilinear",
                                                 align_corners=False),
                                     nn.Conv2d(w[1], w[0], 1))
        self.dec = nn.ModuleList([self.double_conv(2 * w[2], w[2]),
                                  self.double_conv(2 * w[1], w[1]),
                                  self.double_conv(2 * w[0], w[0])])
        self.head = nn.Conv2d(w[0], classes, 1)

    def forward(self, x):
        skips = []
        for enc in self.enc:
            x = enc(x)
            skips.append(x)
            x = self.pool(x)
        x = self.bottleneck(x)
        for up, dec in zip(list(self.up) + [self.up_last], self.dec):
            x = dec(torch.cat([up(x), skips.pop()], dim=1))
        return self.head(x)


# ---------------------------------------------------------------------------------------------
# Model table: name -> builder returning (module, [(input name, sample array)], [output names])
# ---------------------------------------------------------------------------------------------

def _image(rng):
    return [("input", rng.standard_normal(IMAGE_SHAPE, dtype=np.float32))]


def _tv(ctor, **kw):
    def build(rng):
        return ctor(weights=None, **kw), _image(rng), ["output"]
    return build


def _vit(rng):
    model = torchvision.models.VisionTransformer(
        image_size=224, patch_size=16, num_layers=4, num_heads=4,
        hidden_dim=256, mlp_dim=512, num_classes=1000)
    return model, _image(rng), ["output"]


def _bert(rng):
    model = BertEncoder()
    ids = rng.integers(0, model.word.num_embeddings, size=(1, 128), dtype=np.int64)
    mask = np.ones((1, 128), dtype=np.int64)
    mask[:, 100:] = 0  # trailing padding, so the mask matters
    return model, [("input_ids", ids), ("attention_mask", mask)], ["last_hidden_state", "pooler_output"]


def _gpt2(rng):
    model = GPT2()
    ids = rng.integers(0, model.wte.num_embeddings, size=(1, 64), dtype=np.int64)
    return model, [("input_ids", ids)], ["logits"]


def _lstm(rng):
    return LSTMModel(), [("input", rng.standard_normal((16, 1, 32), dtype=np.float32))], \
        ["output", "h_n", "c_n"]


def _lstm_h256(rng):
    """The 2-layer LSTM of hidden 256 over 32 steps that onnxruntime splits across threads."""
    return LSTMModel(input_size=256, hidden=256), \
        [("input", rng.standard_normal((32, 1, 256), dtype=np.float32))], ["output", "h_n", "c_n"]


def _bert_base(rng):
    """BERT-base's shape: 12 layers, hidden 768, 12 heads, FFN 3072, a 30522-token vocabulary,
    128 tokens."""
    model = BertEncoder(vocab=30522, hidden=768, layers=12, heads=12, ffn=3072, max_pos=512)
    ids = rng.integers(0, model.word.num_embeddings, size=(1, 128), dtype=np.int64)
    mask = np.ones((1, 128), dtype=np.int64)
    mask[:, 100:] = 0
    return model, [("input_ids", ids), ("attention_mask", mask)], ["last_hidden_state", "pooler_output"]


def _gpt2_small(rng):
    """GPT-2-small's shape: 12 layers, hidden 768, 12 heads, a 50257-token vocabulary (the head
    tied to it), 1024 positions, 128 tokens."""
    model = GPT2(vocab=50257, hidden=768, layers=12, heads=12, n_ctx=1024)
    ids = rng.integers(0, model.wte.num_embeddings, size=(1, 128), dtype=np.int64)
    return model, [("input_ids", ids)], ["logits"]


def _bert_tiny(rng):
    model = BertEncoder(vocab=512, hidden=64, layers=2, heads=2, ffn=128, max_pos=64)
    ids = rng.integers(0, model.word.num_embeddings, size=(1, 16), dtype=np.int64)
    return model, [("input_ids", ids), ("attention_mask", np.ones((1, 16), dtype=np.int64))], \
        ["last_hidden_state", "pooler_output"]


def _gpt2_tiny(rng):
    model = GPT2(vocab=512, hidden=64, layers=2, heads=2, n_ctx=64)
    ids = rng.integers(0, model.wte.num_embeddings, size=(1, 16), dtype=np.int64)
    return model, [("input_ids", ids)], ["logits"]


def _unet(rng):
    return UNet(), [("input", rng.standard_normal((1, 3, 128, 128), dtype=np.float32))], ["output"]


MODELS = {
    "resnet18": _tv(torchvision.models.resnet18),
    "mobilenet_v2": _tv(torchvision.models.mobilenet_v2),
    "mobilenet_v3_large": _tv(torchvision.models.mobilenet_v3_large),
    "squeezenet1_1": _tv(torchvision.models.squeezenet1_1),
    "googlenet": _tv(torchvision.models.googlenet, aux_logits=False, init_weights=True,
                     transform_input=False),
    "shufflenet_v2_x1_0": _tv(torchvision.models.shufflenet_v2_x1_0),
    "efficientnet_b0": _tv(torchvision.models.efficientnet_b0),
    "densenet121": _tv(torchvision.models.densenet121),
    "vit": _vit,
    "bert": _bert,
    "gpt2": _gpt2,
    "lstm": _lstm,
    "regnet_y_400mf": _tv(torchvision.models.regnet_y_400mf),
    "unet": _unet,
    "efficientnet_v2_s": _tv(torchvision.models.efficientnet_v2_s),
    "convnext_tiny": _tv(torchvision.models.convnext_tiny),
    "swin_t": _tv(torchvision.models.swin_t),
    "resnet50": _tv(torchvision.models.resnet50),
    "bert_base": _bert_base,
    "gpt2_small": _gpt2_small,
    "lstm_h256": _lstm_h256,
}

# int8 models made by onnxruntime's quantizer from a float model above (the same weights and
# sample inputs): name -> (float model, how). "static": quantize_static, QDQ format, int8
# weights (per channel) and uint8 activations calibrated (MinMax) on CALIB_BATCHES fixed-seed
# random inputs (token ids within the sample's range); "dynamic": quantize_dynamic, uint8 activations quantized at run time
# (DynamicQuantizeLinear + MatMulInteger), int8 weights.
QUANTIZED = {
    "resnet18_int8": ("resnet18", "static"),
    "bert_int8": ("bert", "dynamic"),
    "bert_int8_qdq": ("bert", "static"),
}
CALIB_BATCHES = 4

# Models too heavy for the default list, which CI exports, compiles and runs in every mode (four
# CPU modes, PoCL in both schedules, nvcc and hipcc builds) on 2 cores: 82-109 MiB of weights,
# 13-48 s to export, 12-32 s to compile, 5.7-9.1 GFLOP a run. --list leaves them out, --list-all
# includes them, and every tool takes them by name.
# ResNet-50, BERT-base and GPT-2-small (98, 440 and 650 MB of weights) and the LSTM of hidden
# 256 are the shapes the CPU benchmark is judged on: heavy too, by name. So is the QDQ BERT for
# another reason: its 150 QuantizeLinear/DequantizeLinear pairs take 46 s (operator schedule)
# and 188 s (block schedule) on PoCL, so CI runs it by name on the CPU only (real_run_qdq_*).
HEAVY = {"efficientnet_v2_s", "convnext_tiny", "swin_t", "resnet50", "bert_base", "gpt2_small",
         "lstm_h256", "bert_int8_qdq"}
ALL = list(MODELS) + list(QUANTIZED)

# Models exported with symbolic dimensions (dynamic_axes), for the --dim/--shape tests
# (tests/test_dynamic_shapes.py): name -> (builder, input names, dynamic_axes). They are not in
# --list, since the real-model tests compile every listed model as it is.
DYNAMIC_MODELS = {
    "resnet18_dynamic": (_tv(torchvision.models.resnet18), ["x"],
                         {"x": {0: "batch"}, "output": {0: "batch"}}),
    "bert_tiny_dynamic": (_bert_tiny, ["input_ids", "attention_mask"],
                          {"input_ids": {0: "batch", 1: "seq"},
                           "attention_mask": {0: "batch", 1: "seq"},
                           "last_hidden_state": {0: "batch", 1: "seq"},
                           "pooler_output": {0: "batch"}}),
    "gpt2_tiny_dynamic": (_gpt2_tiny, ["input_ids"],
                          {"input_ids": {0: "batch", 1: "seq"}, "logits": {0: "batch", 1: "seq"}}),
}


# ---------------------------------------------------------------------------------------------
# Weight re-randomisation
# ---------------------------------------------------------------------------------------------

def _normal_(p, std):
    with torch.no_grad():
        p.normal_(0.0, std)


def randomize(model, calib_inputs):
    """Give every parameter a random value; measure, then perturb, BatchNorm statistics."""
    done = set()
    bns = []
    for m in model.modules():
        if isinstance(m, (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.Linear)):
            fan_in = m.weight[0].numel()
            # He init for conv (ReLU-family follows), LeCun for linear layers.
            _normal_(m.weight, math.sqrt((2.0 if not isinstance(m, nn.Linear) else 1.0) / fan_in))
            if m.bias is not None:
                _normal_(m.bias, 0.05)
        elif isinstance(m, nn.Embedding):
            _normal_(m.weight, 0.5)
        elif isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d, nn.LayerNorm)):
            if getattr(m, "weight", None) is not None:
                with torch.no_grad():
                    m.weight.uniform_(0.5, 1.5)
                _normal_(m.bias, 0.1)
            if isinstance(m, nn.modules.batchnorm._BatchNorm):
                bns.append(m)
        elif isinstance(m, nn.LSTM):
            m.reset_parameters()  # uniform(-1/sqrt(H), 1/sqrt(H)), from the seeded generator
        else:
            continue
        done.update(id(p) for p in m.parameters(recurse=False))
    for p in model.parameters():  # leftovers, e.g. ViT's class token and position embedding
        if id(p) not in done:
            _normal_(p, 0.1)

    if bns:
        saved = [bn.momentum for bn in bns]
        for bn in bns:
            bn.reset_running_stats()
            bn.momentum = None  # cumulative average over the calibration pass
        model.train()
        with torch.no_grad():
            model(*calib_inputs)
        for bn, mom in zip(bns, saved):
            bn.momentum = mom
            with torch.no_grad():
                bn.running_var.mul_(torch.empty_like(bn.running_var).uniform_(0.8, 1.25))
                bn.running_mean.add_(0.1 * torch.randn_like(bn.running_mean) * bn.running_var.sqrt())
    model.eval()


# ---------------------------------------------------------------------------------------------
# Export
# ---------------------------------------------------------------------------------------------

def to_torch(a):
    """numpy -> torch through raw bytes (see the module docstring)."""
    a = np.ascontiguousarray(a)
    dtype = {np.dtype(np.float32): torch.float32, np.dtype(np.int64): torch.int64}[a.dtype]
    return torch.frombuffer(bytearray(a.tobytes()), dtype=dtype).reshape(a.shape)


def _atomic_write(path, write):
    tmp = "%s.tmp-%d" % (path, os.getpid())
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def input_paths(outdir, name, count):
    """Sample-input file names for a model with `count` graph inputs, in graph-input order."""
    return [os.path.join(outdir, "%s.input%s.npy" % (name, "" if i == 0 else ".%d" % i))
            for i in range(count)]


def build(name):
    """The model `name` in eval mode with the weights export() writes, its sample inputs
    [(input name, array)] and its output names: the same seeds and draws in the same order, so
    that other tools (bench/gpu_peers.py) run exactly the exported network."""
    seed = zlib.crc32(name.encode())
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    dynamic = DYNAMIC_MODELS.get(name)
    model, inputs, output_names = (dynamic[0] if dynamic else MODELS[name])(rng)
    args = tuple(to_torch(a) for _, a in inputs)
    if any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in model.modules()):
        calib = tuple(to_torch(rng.standard_normal((2,) + a.shape[1:], dtype=np.float32))
                      for _, a in inputs)
    else:
        calib = args
    randomize(model, calib)
    return model, inputs, output_names


def export(name, outdir):
    model, inputs, output_names = build(name)
    dynamic = DYNAMIC_MODELS.get(name)
    input_names = dynamic[1] if dynamic else [n for n, _ in inputs]
    args = tuple(to_torch(a) for _, a in inputs)

    with torch.no_grad():
        out = model(*args)
    first = out[0] if isinstance(out, (tuple, list)) else out
    if not torch.isfinite(first).all() or float(first.std()) == 0.0:
        raise RuntimeError("%s: degenerate output (std %g)" % (name, float(first.std())))

    for path, (_, a) in zip(input_paths(outdir, name, len(inputs)), inputs):
        _atomic_write(path, lambda tmp, a=a: _save_npy(tmp, a))
    _atomic_write(os.path.join(outdir, name + ".onnx"), lambda tmp: torch.onnx.export(
        model, args, tmp, opset_version=OPSET, input_names=input_names,
        output_names=output_names, dynamic_axes=dynamic[2] if dynamic else None,
        **TORCHSCRIPT_EXPORTER))
    return float(first.std())


def export_quantized(name, outdir):
    """QUANTIZED[name]: its float model exported into a scratch folder (same seeds as under its
    own name), then quantized by onnxruntime; the float model's sample inputs are this one's."""
    import onnxruntime.quantization as q  # only these models need onnxruntime here

    base, how = QUANTIZED[name]
    with tempfile.TemporaryDirectory(prefix="bdc-quant-") as tmp:
        std = export(base, tmp)
        src = os.path.join(tmp, base + ".onnx")
        count = len(build(base)[1])
        arrays = [np.load(p) for p in input_paths(tmp, base, count)]
        if how == "static":
            rng = np.random.default_rng(zlib.crc32(name.encode()))
            names = [i.name for i in _onnx_inputs(src)]

            def draw(a):  # like the sample: token ids within its range, else N(0, 1)
                if np.issubdtype(a.dtype, np.integer):
                    return rng.integers(a.min(), a.max() + 1, a.shape).astype(a.dtype)
                return rng.standard_normal(a.shape, dtype=np.float32)

            class Calib(q.CalibrationDataReader):
                def __init__(self):
                    self.batches = iter([{n: draw(a) for n, a in zip(names, arrays)}
                                         for _ in range(CALIB_BATCHES)])

                def get_next(self):
                    return next(self.batches, None)

            quantize = lambda out: q.quantize_static(  # noqa: E731
                src, out, Calib(), quant_format=q.QuantFormat.QDQ, per_channel=True,
                activation_type=q.QuantType.QUInt8, weight_type=q.QuantType.QInt8)
        else:
            quantize = lambda out: q.quantize_dynamic(  # noqa: E731
                src, out, weight_type=q.QuantType.QInt8)
        for path, a in zip(input_paths(outdir, name, count), arrays):
            _atomic_write(path, lambda tmp, a=a: _save_npy(tmp, a))
        _atomic_write(os.path.join(outdir, name + ".onnx"), quantize)
    return std


def _onnx_inputs(path):
    import onnx
    return onnx.load(path, load_external_data=False).graph.input


def _save_npy(path, a):
    with open(path, "wb") as f:  # np.save(path) would append ".npy" to the temporary name
        np.save(f, a)


def main(argv):
    if len(argv) >= 1 and argv[0] in ("--list", "--list-all"):
        print("\n".join(n for n in ALL if argv[0] == "--list-all" or n not in HEAVY))
        return 0
    if not argv or argv[0].startswith("-"):
        sys.stderr.write(__doc__.split("\n\n")[1] + "\nmodels: " + " ".join(ALL) + "\n")
        return 1
    outdir, names = argv[0], argv[1:] or [n for n in ALL if n not in HEAVY]
    unknown = [n for n in names if n not in ALL and n not in DYNAMIC_MODELS]
    if unknown:
        sys.stderr.write("export_models: unknown model(s): %s (known: %s)\n"
                         % (" ".join(unknown), " ".join(ALL)))
        return 1
    os.makedirs(outdir, exist_ok=True)
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    for name in names:
        path = os.path.join(outdir, name + ".onnx")
        if os.path.exists(path):
            print("%-20s cached     %8.1f MB" % (name, os.path.getsize(path) / 1e6), flush=True)
            continue
        t0 = time.time()
        std = (export_quantized if name in QUANTIZED else export)(name, outdir)
        print("%-20s exported   %8.1f MB  %6.1f s  (output std %.3g)"
              % (name, os.path.getsize(path) / 1e6, time.time() - t0, std), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

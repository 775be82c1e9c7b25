"""The co-location suite: eight real PyTorch programs that stress a GPU differently.

Each program is built once and then called step by step; a step ends with the GPU idle
(synchronized), so steps per second is the program's own throughput. `PROGRAMS` maps
a name to (builder, what one step is, units per step). Sizes fit eight programs resident
on one 80 GB GPU at once (about 30 GB in all), since the co-run driver keeps every
program loaded and only tells two of them when to run.

| name | what | expected character |
| --- | --- | --- |
| train_gpt | decoder-only transformer training, bf16, AdamW | compute-bound, tensor pipes |
| train_resnet | ResNet-50 training, batch 64, bf16, channels-last | compute and memory mixed |
| infer_resnet | ResNet-50 inference, batch 128, bf16 | compute-bound inference |
| infer_bert_b1 | BERT-base inference, batch 1, 128 tokens | latency (launch) bound |
| decode_llm | 1.3B-parameter decoder, batch 8, one token a step, KV cache | weight reads plus launches |
| stream | STREAM triad on 1 GiB vectors | DRAM bandwidth bound |
| embedding | embedding-bag lookups, random rows of a 4 GiB table | random-access memory bound |
| input_bound | CPU augmentation feeding a small CNN | low duty cycle, CPU bound |
"""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

DEV = "cuda"


def _sync():
    torch.cuda.synchronize()


class _Block(nn.Module):
    """A pre-norm transformer block with causal attention (SDPA)."""

    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.proj = nn.Linear(d, d, bias=False)
        self.ln2 = nn.LayerNorm(d)
        self.up = nn.Linear(d, 4 * d, bias=False)
        self.down = nn.Linear(4 * d, d, bias=False)

    def attend(self, x, cache=None, pos=None):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        shape = (b, t, self.heads, d // self.heads)
        q, k, v = (z.view(shape).transpose(1, 2) for z in (q, k, v))
        if cache is None:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            # attend over the whole cache with a mask, so every step has the same
            # shapes (a new shape per position made kernels be chosen anew each step)
            kc, vc, mask = cache
            kc.index_copy_(2, pos, k)
            vc.index_copy_(2, pos, v)
            y = F.scaled_dot_product_attention(q, kc, vc, attn_mask=mask)
        return self.proj(y.transpose(1, 2).reshape(b, t, d))

    def forward(self, x, cache=None, pos=None):
        x = x + self.attend(x, cache, pos)
        return x + self.down(F.gelu(self.up(self.ln2(x))))


class _Decoder(nn.Module):
    def __init__(self, vocab, d, layers, heads):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(_Block(d, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, ids, caches=None, pos=None):
        x = self.emb(ids)
        for i, blk in enumerate(self.blocks):
            x = blk(x, None if caches is None else caches[i], pos)
        return self.head(self.ln(x))


def train_gpt():
    torch.manual_seed(0)
    model = _Decoder(vocab=32000, d=1024, layers=8, heads=16).to(DEV)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    ids = torch.randint(0, 32000, (8, 512), device=DEV)

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(ids[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        loss.item()

    return step


def _resnet50():
    import torchvision

    return torchvision.models.resnet50(weights=None).to(DEV, memory_format=torch.channels_last)


def train_resnet():
    torch.manual_seed(0)
    model = _resnet50()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(64, 3, 224, 224, device=DEV).to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (64,), device=DEV)

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        loss.item()

    return step


def infer_resnet():
    torch.manual_seed(0)
    model = _resnet50().eval()
    x = torch.randn(128, 3, 224, 224, device=DEV).to(memory_format=torch.channels_last)

    @torch.inference_mode()
    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            model(x).argmax(dim=1).sum().item()

    return step


def infer_bert_b1():
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    model = BertModel(BertConfig()).to(DEV, dtype=torch.float16).eval()
    ids = torch.randint(0, 30000, (1, 128), device=DEV)

    @torch.inference_mode()
    def step():
        model(input_ids=ids).last_hidden_state[:, 0].sum().item()

    return step


def decode_llm():
    torch.manual_seed(0)
    d, layers, heads, batch, ctx = 2048, 24, 16, 8, 1024
    model = _Decoder(vocab=32000, d=d, layers=layers, heads=heads).to(DEV, dtype=torch.bfloat16).eval()
    shape = (batch, heads, ctx, d // heads)
    mask = torch.zeros(1, 1, 1, ctx, device=DEV, dtype=torch.bool)
    caches = [
        (torch.zeros(shape, device=DEV, dtype=torch.bfloat16), torch.zeros(shape, device=DEV, dtype=torch.bfloat16), mask)
        for _ in range(layers)
    ]
    state = {"pos": 512, "tok": torch.randint(0, 32000, (batch, 1), device=DEV)}
    mask[..., :512] = True
    position = torch.zeros(1, dtype=torch.long, device=DEV)

    @torch.inference_mode()
    def step():
        # one token per sequence, attending over a context of 512..1023 cached tokens
        if state["pos"] >= ctx:
            state["pos"] = 512
            mask[..., 512:] = False
        position.fill_(state["pos"])
        mask[..., state["pos"]] = True
        logits = model(state["tok"], caches, position)
        state["tok"] = logits[:, -1].argmax(dim=-1, keepdim=True)
        state["pos"] += 1
        state["tok"].sum().item()

    return step


def stream():
    n = 256 * 1024 * 1024  # 1 GiB of fp32 per vector
    a = torch.empty(n, device=DEV)
    b = torch.rand(n, device=DEV)
    c = torch.rand(n, device=DEV)

    def step():
        for _ in range(10):
            torch.add(b, c, alpha=3.0, out=a)
        _sync()

    return step


def embedding():
    torch.manual_seed(0)
    rows, dim, batch, bag = 8 * 1024 * 1024, 128, 65536, 16
    table = nn.EmbeddingBag(rows, dim, mode="sum").to(DEV)
    g = torch.Generator(device=DEV).manual_seed(1)

    @torch.inference_mode()
    def step():
        for _ in range(4):
            idx = torch.randint(0, rows, (batch, bag), device=DEV, generator=g)
            table(idx).sum()
        _sync()

    return step


def input_bound():
    import torchvision

    torch.manual_seed(0)
    model = torchvision.models.resnet18(weights=None, num_classes=10).to(DEV, memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    rng = np.random.default_rng(0)
    raw = rng.integers(0, 256, size=(32, 160, 160, 3), dtype=np.uint8)
    mean = np.array([0.485, 0.456, 0.406], dtype=np.float32)
    std = np.array([0.229, 0.224, 0.225], dtype=np.float32)

    def augment():
        # what a data loader does per batch: crop, flip, normalize, on one CPU core
        out = np.empty((32, 128, 128, 3), dtype=np.float32)
        for i in range(32):
            y, x = rng.integers(0, 32, size=2)
            img = raw[i, y : y + 128, x : x + 128]
            if rng.random() < 0.5:
                img = img[:, ::-1]
            out[i] = (img.astype(np.float32) / 255.0 - mean) / std
        for _ in range(3):  # colour jitter passes
            out *= rng.uniform(0.9, 1.1, size=(32, 1, 1, 3)).astype(np.float32)
            np.clip(out, -3.0, 3.0, out=out)
        return out

    y = torch.randint(0, 10, (32,), device=DEV)

    def step():
        batch = torch.from_numpy(augment()).permute(0, 3, 1, 2).to(DEV, non_blocking=False)
        batch = batch.contiguous(memory_format=torch.channels_last)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(batch), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        loss.item()

    return step


# name -> (builder, what a step is, units per step, unit)
PROGRAMS = {
    "train_gpt": (train_gpt, "one optimizer step, 8 x 511 tokens", 8 * 511, "tokens"),
    "train_resnet": (train_resnet, "one optimizer step, 64 images", 64, "images"),
    "infer_resnet": (infer_resnet, "one forward pass, 128 images", 128, "images"),
    "infer_bert_b1": (infer_bert_b1, "one forward pass, 1 x 128 tokens", 1, "requests"),
    "decode_llm": (decode_llm, "one token for 8 sequences", 8, "tokens"),
    "stream": (stream, "10 triads over 1 GiB vectors", 10 * 3 * 2**30, "bytes"),
    "embedding": (embedding, "4 batches of 65536 bags of 16 rows", 4 * 65536, "bags"),
    "input_bound": (input_bound, "augment 32 images on the CPU, one training step", 32, "images"),
}


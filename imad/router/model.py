"""The router network of SPEC §5: a two-head MLP with a raw-confidence logit path.

Encoder: `depth` × (Linear → BatchNorm1d → ReLU → Dropout), `width` units. Two heads read the
encoding: ℓ_p (correctness evidence) and ℓ_u (uncertainty). The score is

    p = σ(w1 · logit(clip(conf_initial)) + w2 · ℓ_p + b),    u = σ(ℓ_u)

where `conf_initial` is the model's own verbal confidence, raw, in [0, 1]. The reference code
min-max scales it per batch, so a query's p depends on its batch-mates; here nothing in
`forward` looks across rows. In eval mode BatchNorm uses its running statistics and the linear
layers use a row-wise kernel (`BatchInvariantLinear`), so a row scored alone and the same row
inside any batch get bit-identical p.

At initialisation the ℓ_p head is zero and w1 = 1, b = 0: the untrained router reproduces the
(clipped) raw confidence, and training learns the correction.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, NamedTuple

import torch
from torch import nn
from torch.nn import functional as F

from imad.errors import ConfigError

_VECTOR_PAD = 64
"""Eval-mode element-wise tails are padded to a multiple of this many rows. ATen runs an
element-wise op in SIMD blocks and the leftover elements with scalar code, and the two give
different last bits for exp/log; with the padding every real row takes the SIMD path."""

_VECTOR_CHUNK = 16_384
"""Rows per padded element-wise call: below ATen's parallel grain size (32,768), so no thread
split leaves a scalar tail in the middle of a tensor."""


MAX_FEATURES = 1_024
MAX_WIDTH = 4_096
MAX_DEPTH = 64


@dataclass(frozen=True)
class RouterNetConfig:
    """What rebuilds a `RouterNet`; saved in the checkpoint's config.json."""

    n_features: int = 41
    width: int = 200
    depth: int = 6
    dropout: float = 0.2
    confidence_clip: float = 0.01
    """conf_initial is clipped to [c, 1 − c] before the logit: a verbal 0 or 100 means
    "very sure", not infinitely sure (logit(0.01) ≈ −4.6)."""

    def __post_init__(self) -> None:
        # Upper bounds keep a damaged checkpoint from allocating terabytes or building a
        # million layers before its shapes are checked; SPEC §5 uses 41 × 200 × 6.
        for name, limit in (("n_features", MAX_FEATURES), ("width", MAX_WIDTH), ("depth", MAX_DEPTH)):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= limit:
                raise ConfigError(name, f"must be an integer in [1, {limit}], got {value!r}")
        for name in ("dropout", "confidence_clip"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                raise ConfigError(name, f"must be a number, got {value!r}")
        if not 0.0 <= self.dropout < 1.0:
            raise ConfigError("dropout", f"must be in [0, 1), got {self.dropout!r}")
        if not 0.0 < self.confidence_clip < 0.5:
            raise ConfigError(
                "confidence_clip", f"must be in (0, 0.5), got {self.confidence_clip!r}"
            )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RouterNetConfig:
        unknown = sorted(set(data) - set(cls.__dataclass_fields__))
        if unknown:
            raise ConfigError(unknown[0], "unknown router-model hyper-parameter")
        return cls(**data)


class RouterOutput(NamedTuple):
    p: torch.Tensor
    """P(answer correct), shape (n,)."""
    u: torch.Tensor
    """Auxiliary uncertainty, shape (n,)."""
    logit_p: torch.Tensor
    """The pre-sigmoid score of p, shape (n,)."""


class BatchInvariantLinear(nn.Linear):
    """`nn.Linear` whose eval-mode output for a row does not depend on the other rows.

    BLAS picks different kernels by batch size (gemv for one row, blocked gemm for many), whose
    summation orders differ in the last bits. In eval mode this layer multiplies each row on its
    own — a batched matmul of n independent (1 × in) · (in × out) products, all of the same
    shape — so a row gets the same bits alone or in any batch. Training keeps the fast
    `F.linear` (BatchNorm makes training batch-dependent anyway).
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.training:
            return F.linear(x, self.weight, self.bias)
        weight = self.weight.t().unsqueeze(0).expand(x.shape[0], -1, -1)
        return torch.bmm(x.unsqueeze(1), weight).squeeze(1) + self.bias

    def forward_blocks(self, x: torch.Tensor, block_rows: int) -> torch.Tensor:
        """The output with every `block_rows` consecutive rows multiplied as one product.

        Each block is one `F.linear` call of the same shape, so its bits depend on the block
        alone, never on how many blocks are scored with it (a batched `bmm` does not promise
        that: with one output column its bits changed with the batch). One 42-row product costs
        about a third of 42 one-row products (an answer's cue probes, `Router.scored_rows`),
        though its rows may differ from the one-row kernel's in the last bits."""
        if x.shape[0] % block_rows:
            raise ValueError(f"{x.shape[0]} rows are not whole blocks of {block_rows}")
        if x.shape[0] == 0:
            return F.linear(x, self.weight, self.bias)
        return torch.cat([F.linear(block, self.weight, self.bias) for block in x.split(block_rows)])


class RouterNet(nn.Module):
    """The two-head MLP. Input: scaled features (n, F) and raw conf_initial (n,) in [0, 1]."""

    def __init__(self, config: RouterNetConfig | None = None) -> None:
        super().__init__()
        self.config = config or RouterNetConfig()
        layers: list[nn.Module] = []
        width_in = self.config.n_features
        for _ in range(self.config.depth):
            layers += [
                BatchInvariantLinear(width_in, self.config.width),
                nn.BatchNorm1d(self.config.width),
                nn.ReLU(),
                nn.Dropout(self.config.dropout),
            ]
            width_in = self.config.width
        self.encoder = nn.Sequential(*layers)
        self.head_p = BatchInvariantLinear(self.config.width, 1)
        self.head_u = BatchInvariantLinear(self.config.width, 1)
        self.confidence_weight = nn.Parameter(torch.ones(()))  # w1
        self.evidence_weight = nn.Parameter(torch.ones(()))  # w2
        self.bias = nn.Parameter(torch.zeros(()))  # b
        nn.init.zeros_(self.head_p.weight)
        nn.init.zeros_(self.head_p.bias)

    def forward(self, features: torch.Tensor, confidence: torch.Tensor,
                block_rows: int = 1) -> RouterOutput:
        """Score rows: `features` are scaled (n, F); `confidence` is raw conf_initial (n,).

        In eval mode `block_rows` > 1 multiplies each run of that many rows as one product
        (`BatchInvariantLinear.forward_blocks`): invariant per block instead of per row."""
        if self.training or block_rows == 1:
            encoded = self.encoder(features)
            evidence = self.head_p(encoded).squeeze(-1)
            uncertainty = self.head_u(encoded).squeeze(-1)
        else:
            encoded = features
            for layer in self.encoder:
                is_linear = isinstance(layer, BatchInvariantLinear)
                encoded = layer.forward_blocks(encoded, block_rows) if is_linear else layer(encoded)
            evidence = self.head_p.forward_blocks(encoded, block_rows).squeeze(-1)
            uncertainty = self.head_u.forward_blocks(encoded, block_rows).squeeze(-1)
        if self.training or len(confidence) == 0:
            return self._combine(confidence, evidence, uncertainty)
        outputs = []
        for start in range(0, len(confidence), _VECTOR_CHUNK):
            rows = slice(start, start + _VECTOR_CHUNK)
            n_rows = len(confidence[rows])
            padded = self._combine(*_pad_rows(confidence[rows], evidence[rows], uncertainty[rows]))
            outputs.append([column[:n_rows] for column in padded])
        return RouterOutput(*(torch.cat(column) for column in zip(*outputs, strict=True)))

    def _combine(
        self, confidence: torch.Tensor, evidence: torch.Tensor, uncertainty: torch.Tensor
    ) -> RouterOutput:
        clip = self.config.confidence_clip
        confidence_logit = torch.logit(confidence.clamp(clip, 1.0 - clip))
        logit_p = (
            self.confidence_weight * confidence_logit + self.evidence_weight * evidence + self.bias
        )
        return RouterOutput(
            p=torch.sigmoid(logit_p), u=torch.sigmoid(uncertainty), logit_p=logit_p
        )

    def expected_shapes(self) -> dict[str, tuple[int, ...]]:
        """Name → shape of every tensor a checkpoint of this configuration must hold."""
        return {name: tuple(t.shape) for name, t in self.state_dict().items()}


def _pad_rows(*columns: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Pad 1-D tensors with 0.5 to a multiple of `_VECTOR_PAD` rows (see there for why)."""
    missing = -len(columns[0]) % _VECTOR_PAD
    return tuple(torch.cat([c, c.new_full((missing,), 0.5)]) for c in columns)

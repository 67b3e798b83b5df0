"""The two-head MLP (SPEC §5): batch invariance, the raw-confidence path, its config."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from imad.errors import ConfigError
from imad.router import RouterNet, RouterNetConfig
from tests.router.router_helpers import make_router, random_features


def test_row_alone_and_in_a_batch_of_64_get_identical_p():
    router = make_router(width=200, depth=6)  # the shipped architecture
    batch = random_features(64)
    together = router.predict_proba(batch)
    alone = np.concatenate([router.predict_proba(batch[i : i + 1]) for i in range(64)])
    assert np.array_equal(alone, together)
    assert np.unique(together).size > 50  # the scores are not constant per batch


def test_p_does_not_depend_on_batch_order_or_size():
    router = make_router(width=200, depth=6)
    rows = random_features(300, seed=3)
    full = router.predict_proba(rows)
    order = np.random.default_rng(0).permutation(300)
    assert np.array_equal(router.predict_proba(rows[order]), full[order])
    for start, size in [(0, 1), (5, 7), (17, 63), (40, 65), (100, 200)]:
        assert np.array_equal(router.predict_proba(rows[start : start + size]),
                              full[start : start + size])


def test_eval_forward_matches_plain_linear_algebra():
    """The row-wise kernel computes the same function as nn.Linear (to float rounding)."""
    router = make_router()
    rows = torch.randn(10, 41)
    confidence = torch.rand(10)
    with torch.no_grad():
        p_eval = router.net.eval()(rows, confidence).p
        hidden = rows
        for layer in router.net.encoder:
            if isinstance(layer, torch.nn.Linear):
                hidden = torch.nn.functional.linear(hidden, layer.weight, layer.bias)
            else:
                hidden = layer(hidden)
        evidence = torch.nn.functional.linear(hidden, router.net.head_p.weight,
                                              router.net.head_p.bias).squeeze(-1)
        logit = (router.net.confidence_weight * torch.logit(confidence.clamp(0.01, 0.99))
                 + router.net.evidence_weight * evidence + router.net.bias)
    np.testing.assert_allclose(p_eval.numpy(), torch.sigmoid(logit).numpy(), rtol=1e-5, atol=1e-6)


def test_a_block_gets_the_same_bits_alone_and_among_any_number_of_blocks():
    router = make_router(width=200, depth=6)
    rows = torch.from_numpy(random_features(42 * 9, seed=5).astype("f4"))
    confidence = torch.rand(42 * 9, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        alone = [router.net.eval()(rows[b * 42:(b + 1) * 42], confidence[b * 42:(b + 1) * 42],
                                   block_rows=42) for b in range(9)]
        for n_blocks in (2, 3, 9):
            together = router.net(rows[:42 * n_blocks], confidence[:42 * n_blocks], block_rows=42)
            for b in range(n_blocks):
                assert torch.equal(together.p[b * 42:(b + 1) * 42], alone[b].p)
                assert torch.equal(together.u[b * 42:(b + 1) * 42], alone[b].u)


def test_blocks_compute_the_row_wise_function_and_identical_rows_get_identical_bits():
    router = make_router(width=200, depth=6)
    rows = torch.from_numpy(random_features(84, seed=6).astype("f4"))
    rows[41] = rows[0]  # the first and the last row of a block
    confidence = torch.rand(84)
    confidence[41] = confidence[0]
    with torch.no_grad():
        blocked = router.net.eval()(rows, confidence, block_rows=42)
        row_wise = router.net(rows, confidence)
    np.testing.assert_allclose(blocked.p.numpy(), row_wise.p.numpy(), rtol=0, atol=1e-6)
    assert blocked.p[41] == blocked.p[0]


def test_rows_that_are_not_whole_blocks_are_refused():
    router = make_router()
    with pytest.raises(ValueError, match="not whole blocks of 42"):
        router.net.eval()(torch.zeros(43, 41), torch.zeros(43), block_rows=42)


def test_untrained_router_reproduces_clipped_raw_confidence():
    torch.manual_seed(0)
    net = RouterNet().eval()
    confidence = torch.tensor([0.0, 0.005, 0.3, 0.7, 0.999, 1.0])
    with torch.no_grad():
        p = net(torch.randn(6, 41), confidence).p
    expected = confidence.clamp(0.01, 0.99)
    np.testing.assert_allclose(p.numpy(), expected.numpy(), atol=1e-6)


def test_confidence_enters_raw_and_monotonically():
    router = make_router()
    with torch.no_grad():
        router.net.confidence_weight.fill_(1.5)
    rows = np.repeat(random_features(1), 5, axis=0)
    column = router.feature_names.index("conf_initial")
    rows[:, column] = [0.0, 0.25, 0.5, 0.75, 1.0]
    # Scores come from the network with the same scaled features but a rising raw confidence.
    scaled = torch.from_numpy(((rows - router.scaler_mean) / router.scaler_scale).astype("f4"))
    scaled[:] = scaled[0]
    with torch.no_grad():
        p = router.net(scaled, torch.from_numpy(rows[:, column].astype("f4"))).p.numpy()
    assert np.all(np.diff(p) > 0)


def test_train_mode_output_shapes_and_gradients():
    net = RouterNet(RouterNetConfig(width=16, depth=2)).train()
    output = net(torch.randn(8, 41), torch.rand(8))
    assert output.p.shape == output.u.shape == output.logit_p.shape == (8,)
    (output.p.sum() + output.u.sum()).backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in net.parameters())


def test_empty_batch_scores_to_empty():
    assert make_router().predict_proba(np.zeros((0, 41))).shape == (0,)


@pytest.mark.parametrize(
    ("field", "value"),
    [("width", 0), ("depth", -1), ("n_features", 1.5), ("dropout", 1.0), ("confidence_clip", 0.5)],
)
def test_invalid_hyper_parameters_name_the_field(field, value):
    with pytest.raises(ConfigError) as error:
        RouterNetConfig(**{field: value})
    assert error.value.field == field


def test_architecture_is_the_spec_one():
    net = RouterNet()
    linear = [m for m in net.encoder if isinstance(m, torch.nn.Linear)]
    assert [tuple(m.weight.shape) for m in linear] == [(200, 41)] + [(200, 200)] * 5
    kinds = [type(m).__name__ for m in net.encoder][:4]
    assert kinds == ["BatchInvariantLinear", "BatchNorm1d", "ReLU", "Dropout"]
    assert net.encoder[3].p == 0.2
    shapes = net.expected_shapes()
    assert shapes["head_p.weight"] == (1, 200) and shapes["head_u.weight"] == (1, 200)

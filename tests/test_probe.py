"""ledger_report.probe on the CPU: a small decoder (tests/support/decoder.py, plain torch, random
weights) trained three steps under the probe.

Independent figures: the parameter bytes counted by hand from the shapes; AdamW's state from
torch/optim/adamw.py (exp_avg and exp_avg_sq like each parameter, and a float32 ``step`` tensor per
parameter); torch.profiler's own memory events on a replay of the same seeded run with the phase
boundaries marked by the test's loop (one profiler session at a time: the probe's CPU counter is
itself a profiler session, so the same run cannot carry both).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from support.decoder import (  # noqa: E402
    BATCH,
    FFN,
    HEADS,
    HIDDEN,
    LAYERS,
    ROW,
    SEQ,
    VOCAB,
    build,
    train_step,
)

import ledger_report as lr  # noqa: E402
from ledger_report.probe import (  # noqa: E402
    PHASES,
    PreflightError,
    Probe,
    ProbeCallback,
    _windows_from_trace,
    preflight,
)
from ledger_report.reconciler import read_run, reconcile  # noqa: E402

# parameters by hand: embedding V·h, per layer two norms 2h, qkv 3h², proj h², gate_up 2hf,
# down fh; the final norm h and the head h·V
PARAMS = VOCAB * HIDDEN * 2 + HIDDEN + LAYERS * (2 * HIDDEN + 4 * HIDDEN**2 + 3 * HIDDEN * FFN)
TENSORS = 1 + LAYERS * 6 + 2  # parameter tensors: embed, 6 per block, norm, head
assert HEADS and SEQ


def _probe_run(path, hold=None):
    """Three steps of the decoder under the probe (steps 0, 1, 2 recorded: every=2)."""
    model, opt, batch = build()
    probe = Probe(path, row="tiny-decoder", every=2).attach(model, opt)
    for _ in range(3):
        train_step(model, opt, *batch(), probe=probe, hold=hold)
    probe.detach()
    return probe, path


@pytest.fixture(scope="module")
def probed(tmp_path_factory):
    return _probe_run(tmp_path_factory.mktemp("probe") / "run.jsonl")


@pytest.mark.slow
def test_three_steps_recorded_per_phase(probed):
    """Steps 0, 1 and 2 (every=2) each give one JSON line with every phase; setup at step 0 is
    the fp32 parameters (4 bytes × PARAMS); step 1 starts with AdamW's state allocated by step 0's
    optimizer step: 2 × 4 × PARAMS + 4 bytes per parameter tensor (the float32 step)."""
    probe, path = probed
    lines = [json.loads(s) for s in path.read_text().splitlines()]
    assert [r["step"] for r in lines] == [0, 1, 2]
    assert lines == probe.records
    r0, r1 = lines[0], lines[1]
    assert list(r0["phases"]) == list(PHASES)
    assert r0["phases"]["setup"]["allocated"] == 4 * PARAMS  # 2,656,768 bytes
    jump = r1["phases"]["setup"]["allocated"] - r0["phases"]["setup"]["allocated"]
    assert jump == 2 * 4 * PARAMS + 4 * TENSORS
    assert r0["tokens"] == BATCH * SEQ and r0["micro_batches"] == 1 and r0["loss_marked"]
    assert r0["phases"]["setup"]["reserved"] is None  # no caching allocator on the CPU
    for r in lines:
        a = {p: v["allocated"] for p, v in r["phases"].items()}
        # forward holds activations above the state; the loss adds the logits (B·S·V fp32)
        assert a["forward"] > a["setup"]
        assert a["loss"] - a["forward"] >= 4 * BATCH * SEQ * VOCAB
        assert r["peak"]["allocated"] == max(a.values())


def _profiled_replay(hold=None):
    """The same seeded run under the test's own profiler, started before the model is built so
    that every free matches an allocation; phases marked by the loop and a head pre-hook."""
    from torch.profiler import ProfilerActivity, profile, record_function

    marks: list[str] = []

    def mark(name):
        with record_function(f"ledger-probe::{len(marks)}"):
            pass
        marks.append(name)

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        model, opt, batch = build()
        model.head.register_forward_pre_hook(lambda m, a: mark("loss"))
        for _ in range(3):
            train_step(model, opt, *batch(), mark=mark, hold=hold)
    with tempfile.TemporaryDirectory() as d:
        trace = Path(d) / "trace.json"
        prof.export_chrome_trace(str(trace))
        events = json.loads(trace.read_text())["traceEvents"]
    # window k runs from mark k-1 to mark k: name each by the phase it measures
    names = ["before"] + marks[:-1]
    windows = _windows_from_trace(events, names, 0)
    steps, cur = [], {}
    for (name, peaks), nxt in zip(windows, marks):
        if name in ("forward", "loss", "backward", "optimizer"):
            cur[name] = max(cur.get(name, 0), peaks["allocated"])
        if nxt == "end":
            steps.append(cur)
            cur = {}
    return steps


@pytest.mark.slow
@pytest.mark.parametrize("hold", [False, True], ids=["loop-frees-logits", "loop-holds-logits"])
def test_phase_peaks_match_the_profilers_own(probed, tmp_path, hold):
    """Each phase's peak from the probe equals the one torch.profiler's memory events give on a
    replay of the same seeded run, less the batch: the probe starts from the model's and the
    optimizer's tensors, the test's profiler (started before the model was built) also counts the
    step's input ids and labels, two int64 tensors of B × S = 4 × 64 (4,096 bytes together).
    With a loop that holds the last step's logits into the next step's forward, the probe counts
    them from the step's start too (it sees them freed there)."""
    probe, _ = _probe_run(tmp_path / "run.jsonl", hold=[]) if hold else probed
    replay = _profiled_replay(hold=[] if hold else None)
    batch_bytes = 2 * 8 * BATCH * SEQ
    assert len(replay) == len(probe.records) == 3
    for rec, ref in zip(probe.records, replay):
        for phase in ("forward", "loss", "backward", "optimizer"):
            got, want = rec["phases"][phase]["allocated"], ref[phase]
            assert got == want - batch_bytes, (rec["step"], phase, got, want)
    if hold:  # step 1's forward holds step 0's logits, B·S·V fp32, above the plain loop's
        plain = probed[0].records[1]["phases"]["forward"]["allocated"]
        assert probe.records[1]["phases"]["forward"]["allocated"] == plain + 4 * BATCH * SEQ * VOCAB


@pytest.mark.slow
def test_reconcile_the_probe_run(probed):
    """`ledger-report reconcile inputs.csv run.jsonl` on the run: the ledger's state at setup and
    its optimizer moments (the step-1 jump) are what the probe measured, to the AdamW step tensors
    (4 bytes per parameter tensor, which the ledger does not count)."""
    _, path = probed
    ledger = lr.compute(lr.read([ROW]))[0]
    doc = reconcile(ledger, [read_run(path)])
    items = {i["window"]: i for i in doc["items"]}
    assert items["setup"]["difference_bytes"] == 0
    assert items["moments"]["difference_bytes"] == 4 * TENSORS
    first = doc["first_step"]
    assert first["jump_bytes"] >= first["estimate_jump_bytes"]
    assert [p["phase"] for p in doc["phases"]] == list(PHASES)
    assert doc["throughput"]["measured_mfu"] is None  # a CPU run says nothing of an H100
    assert doc["throughput"]["measured_tokens_per_s_per_gpu"] > 0


@pytest.mark.slow
def test_preflight_leaves_weights_and_state_as_they_were():
    """preflight runs one step at learning rate 0 and zeroes AdamW's state after it: the weights
    are bit for bit the same, the moments exist (allocated) and are zero, the gradients are gone."""
    model, opt, batch = build()
    before = [p.detach().clone() for p in model.parameters()]
    ids, labels = batch()

    def loss_fn(out, b):
        return torch.nn.functional.cross_entropy(out.view(-1, VOCAB), labels.view(-1))

    rec = preflight(model, opt, ids, loss_fn=loss_fn, capacity_bytes=10**9)
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))
    assert all(p.grad is None for p in model.parameters())
    states = list(opt.state.values())
    assert len(states) == TENSORS
    assert all(float(s["exp_avg"].abs().sum()) == 0 and float(s["step"]) == 0 for s in states)
    assert rec["phases"]["optimizer"]["allocated"] >= 4 * PARAMS * 4  # weights, grads, m, v
    assert opt.param_groups[0]["lr"] == 1e-3


@pytest.mark.slow
def test_preflight_raises_with_phase_rank_and_ledger():
    """A budget below the step's peak: PreflightError naming the phase, the rank and the
    ledger's figure for the row."""
    model, opt, batch = build()
    ids, labels = batch()
    ledger = lr.compute(lr.read([ROW]))[0]

    def loss_fn(out, b):
        return torch.nn.functional.cross_entropy(out.view(-1, VOCAB), labels.view(-1))

    with pytest.raises(PreflightError) as e:
        preflight(model, opt, ids, budget=0.5, loss_fn=loss_fn, capacity_bytes=20 * 10**6,
                  ledger=ledger)  # fmt: skip
    err = e.value
    assert err.rank == 0 and err.phase in PHASES and err.peak_bytes > 10 * 10**6
    msg = str(err)
    assert f"rank 0: the {err.phase} phase" in msg and "budget 0.5 × 0.02 GB" in msg
    assert "the ledger for tiny-decoder" in msg


@pytest.mark.slow
def test_trainer_callback_logic(tmp_path):
    """The Trainer callback's methods, called as transformers' CallbackHandler calls them
    (on_train_begin with model= and optimizer=), without transformers installed."""
    model, opt, batch = build()
    cb = ProbeCallback(tmp_path / "hf.jsonl", row="tiny-decoder", every=1)
    control = object()
    assert cb.on_train_begin(None, None, control, model=model, optimizer=opt) is control
    for _ in range(2):
        ids, labels = batch()
        logits = model(ids)
        torch.nn.functional.cross_entropy(logits.view(-1, VOCAB), labels.view(-1)).backward()
        opt.step()
        opt.zero_grad()
        with torch.no_grad():  # an evaluation between steps: no step of its own, no tokens
            model(ids)
    cb.on_train_end(None, None, control)
    recs = [json.loads(s) for s in (tmp_path / "hf.jsonl").read_text().splitlines()]
    assert [r["step"] for r in recs] == [0, 1]
    assert [(r["tokens"], r["micro_batches"]) for r in recs] == [(BATCH * SEQ, 1)] * 2
    assert not any(r["loss_marked"] for r in recs)
    ledger = lr.compute(lr.read([ROW]))[0]
    doc = reconcile(ledger, [read_run(tmp_path / "hf.jsonl")])
    assert [p["loss_marked"] for p in doc["phases"] if p["phase"] == "loss"] == [False]
    # no loss marker: the loss window runs to the logits' gradient, so it holds the logits'
    # gradient too (B·S·V fp32 more than with the marker)
    assert recs[1]["phases"]["loss"]["allocated"] > recs[1]["phases"]["forward"]["allocated"]
    with pytest.raises(ValueError, match="no model or optimizer"):
        ProbeCallback(tmp_path / "x.jsonl").on_train_begin(None, None, control, model=model)


@pytest.mark.slow
def test_trainer_callback_in_a_trainer(tmp_path):
    """With transformers installed (not a test dependency: skipped without it), three steps of a
    Trainer on a random 2-layer LlamaForCausalLM: one line per step, setup = the parameters and
    buffers' bytes (fp32), 4 sequences of 32 tokens a step."""
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("accelerate")
    from ledger_report.probe import trainer_callback

    cfg = transformers.LlamaConfig(
        vocab_size=512, hidden_size=64, intermediate_size=176, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=64,
    )  # fmt: skip
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(cfg)
    state_bytes = sum(t.untyped_storage().nbytes() for t in [*model.parameters(), *model.buffers()])

    class Data(torch.utils.data.Dataset):
        def __len__(self):
            return 12

        def __getitem__(self, i):
            ids = torch.randint(0, 512, (32,))
            return {"input_ids": ids, "labels": ids.clone()}

    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / "out"), per_device_train_batch_size=4, max_steps=3,
        report_to=[], save_strategy="no", logging_strategy="no", use_cpu=True,
    )  # fmt: skip
    path = tmp_path / "hf.jsonl"
    cb = trainer_callback(path, row="tiny-llama", every=1)
    transformers.Trainer(model=model, args=args, train_dataset=Data(), callbacks=[cb]).train()
    recs = [json.loads(s) for s in path.read_text().splitlines()]
    assert [r["step"] for r in recs] == [0, 1, 2]
    assert recs[0]["phases"]["setup"]["allocated"] == state_bytes
    assert all(r["tokens"] == 4 * 32 for r in recs)


@pytest.mark.slow
def test_a_loop_that_calls_the_models_parts(tmp_path):
    """A chunked loss calls the model's parts (its hidden states, then the head on each chunk),
    never the model itself: the step starts at the input embedding's forward, and its tokens are
    counted there once."""
    model, opt, batch = build()
    probe = Probe(None, every=1).attach(model, opt)
    for _ in range(2):
        ids, labels = batch()
        h = model.hidden_states(ids)
        loss = sum(
            torch.nn.functional.cross_entropy(model.head(hc).flatten(0, 1), lc.flatten())
            for hc, lc in zip(h.chunk(2, dim=1), labels.chunk(2, dim=1))
        )
        probe.loss(loss).backward()
        opt.step()
        opt.zero_grad()
    probe.detach()
    assert [(r["step"], r["tokens"], r["micro_batches"]) for r in probe.records] == [
        (0, BATCH * SEQ, 1),
        (1, BATCH * SEQ, 1),
    ]
    assert list(probe.records[1]["phases"]) == list(PHASES)


@pytest.mark.slow
def test_one_file_per_rank(tmp_path, monkeypatch):
    """``{rank}`` in the path gives one file per rank (RANK and WORLD_SIZE from the environment
    where torch.distributed is not initialised); reconcile reads both files: the rank given twice
    the batch is the worst, and the spread is the difference of the two ranks' peaks."""
    path = str(tmp_path / "run-{rank}.jsonl")
    probes = []
    for rank, batch_size in ((0, BATCH), (1, 2 * BATCH)):
        monkeypatch.setenv("RANK", str(rank))
        monkeypatch.setenv("WORLD_SIZE", "2")
        model, opt, batch = build(batch_size=batch_size)
        probe = Probe(path, row="tiny-decoder", every=1).attach(model, opt)
        for _ in range(2):
            train_step(model, opt, *batch(), probe=probe)
        probe.detach()
        probes.append(probe)
    files = sorted(tmp_path.glob("run-*.jsonl"))
    assert [f.name for f in files] == ["run-0.jsonl", "run-1.jsonl"]
    recs = [json.loads(f.read_text().splitlines()[-1]) for f in files]
    assert [(r["rank"], r["world_size"], r["tokens"]) for r in recs] == [
        (0, 2, BATCH * SEQ),
        (1, 2, 2 * BATCH * SEQ),
    ]
    ledger = lr.compute(lr.read([ROW]))[0]
    doc = reconcile(ledger, [read_run(f) for f in files])
    ranks = doc["ranks"]
    peaks = [max(r["peak"]["allocated"] for r in p.records) for p in probes]
    assert [r["peak_bytes"] for r in ranks["per_rank"]] == peaks
    assert ranks["worst_rank"] == 1 and ranks["spread_bytes"] == peaks[1] - peaks[0] > 0

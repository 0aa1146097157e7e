"""Every registered problem states where it comes from and every way it differs from its source
(``Problem.source``, ``Problem.deviations``), which the study pages' tables of sources show
(``analysis/sources.py``); a problem that declares nothing (a user's) declares "" and ()."""

import pytest
import torch

from problems import PROBLEMS, DiscreteZ, Problem, build_problem


def check_sentences(where: str, deviations: object) -> None:
    """Each deviation is one sentence: text, one line, a full stop at the end and no semicolon (the
    table numbers a row's sentences, and one that holds two would read as one)."""
    assert isinstance(deviations, tuple), f"{where}: deviations must be a tuple, got {deviations!r}"
    for sentence in deviations:
        assert isinstance(sentence, str) and sentence.strip(), f"{where}: an empty deviation"
        assert "\n" not in sentence and ";" not in sentence, f"{where}: not one sentence: {sentence!r}"
        assert sentence.endswith("."), f"{where}: no full stop: {sentence!r}"


@pytest.mark.parametrize("name", list(PROBLEMS))
def test_every_registered_problem_declares_its_source_and_deviations(name: str) -> None:
    problem = build_problem(name, with_optimum=False)
    assert problem.source.strip(), f"{name} declares no source"
    assert "\n" not in problem.source, f"{name}: the source is one line"
    check_sentences(name, problem.deviations)


def test_a_problem_declares_nothing_unless_told() -> None:
    z = DiscreteZ(torch.tensor([[0.0], [1.0]], dtype=torch.float64),
                  torch.tensor([0.5, 0.5], dtype=torch.float64))
    problem = Problem(name="mine", d_x=1, d_z=1, z=z, alpha=0.1, noise_std=0.1, n_init=2, iterations=1,
                      objective=lambda u: u.sum(-1))
    assert problem.source == "" and problem.deviations == ()


def test_the_declarations_survive_another_alpha() -> None:
    """A problem at another risk level (``get_problem(name, alpha)``) is the same problem: its
    declarations stay (the table of a study at alpha below the smallest mass reads the same)."""
    from problems import get_problem

    base = build_problem("branin-1-1-discrete", with_optimum=False)
    other = get_problem("branin-1-1-discrete", alpha=base.z.min_mass / 2)  # no optimum search
    assert (other.source, other.deviations) == (base.source, base.deviations)

"""Linkage profile loading and validation."""

from __future__ import annotations

import pytest

from hdwm.config import LinkageProfile, ProfileError, load_profile


def test_default_profile_loads_with_dwm_names():
    p = load_profile("default")
    assert p.name == "default"
    assert p.comparator == "WeightedTokenMatch"  # washline default; DWM matrices stay available
    assert 2 <= p.beta < p.sigma
    assert 0 < p.mu <= 1 and p.muIterate > 0


def test_profile_resolution_does_not_depend_on_cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert load_profile("default").name == "default"


def test_env_config_dir_and_path(tmp_path, monkeypatch):
    (tmp_path / "tight.yaml").write_text("beta: 4\nsigma: 20\nmu: 0.9\n")
    monkeypatch.setenv("WASHLINE_CONFIG_DIR", str(tmp_path))
    p = load_profile("tight")
    assert (p.name, p.beta, p.mu) == ("tight", 4, 0.9)
    assert load_profile(str(tmp_path / "tight.yaml")).beta == 4


def test_dwm_template_defaults():
    p = LinkageProfile()
    assert (p.beta, p.sigma, p.minBlkTokenLen, p.mu, p.muIterate, p.epsilon) == (2, 12, 4, 0.5, 0.10, 0.50)


@pytest.mark.parametrize(
    "body, needle",
    [
        ("beta: 20\nsigma: 10\n", "beta must be ≥ 2 and < sigma"),
        ("beta: 1\n", "beta must be ≥ 2 and < sigma"),
        ("mu: 1.5\n", "mu"),
        ("comparator: Jaccard\n", "comparator"),
        ("betta: 3\n", "betta"),
        ("registryNeighbourhood: nearest\n", "registryNeighbourhood"),
        ("registryTopEntities: 0\n", "registryTopEntities"),
        ("registryScoredPool: 0\n", "registryScoredPool"),
        ("registryScoredMembers: 0\n", "registryScoredMembers"),
        ("- a\n- b\n", "mapping"),
    ],
)
def test_invalid_profiles_raise_clear_errors(tmp_path, body, needle):
    f = tmp_path / "bad.yaml"
    f.write_text(body)
    with pytest.raises(ProfileError, match=needle):
        load_profile(str(f))


def test_unknown_profile_name():
    with pytest.raises(ProfileError, match="not found"):
        load_profile("no-such-profile")


def test_a_profile_that_is_not_utf8_or_not_a_file_is_a_profile_error(tmp_path):
    latin1 = tmp_path / "latin1.yaml"
    latin1.write_bytes(b"mu: 0.5\n# caf\xe9\n")
    with pytest.raises(ProfileError, match=r"latin1.yaml: not UTF-8 text"):
        load_profile(str(latin1))
    folder = tmp_path / "folder.yaml"
    folder.mkdir()
    with pytest.raises(ProfileError, match=r"folder.yaml"):  # a folder is no profile file
        load_profile(str(folder))
    broken = tmp_path / "broken.yaml"
    broken.write_text("mu: [0.5\n")
    with pytest.raises(ProfileError) as err:
        load_profile(str(broken))
    assert "not valid YAML" in str(err.value) and "\n" not in str(err.value)  # one line for the CLI's error:

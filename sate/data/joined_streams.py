"""Audio files that hold a second file behind the first: Ogg, FLAC and MP3 files joined with cat, an Ogg chain.

libsndfile reads the first stream of such a file alone, so a talk joined from its parts was segmented and
translated as its first part, exit 0. `check_one_stream` (Ogg, FLAC) and `check_one_mp3` refuse them, by a walk of
the Ogg pages, a search for a second FLAC marker (after a few reads of frame headers, with their CRC-8, that show
most files to be one stream), and the byte count of the first MP3 frame's LAME (Xing or Info) header. The WAV
joins, whose chunks tell where the audio ends, are `sate.data.audio`'s (`check_nothing_behind_data`); from a pipe,
`check_pipe_rest` and `check_pipe_one_ogg` there look behind what libsndfile read. The same reads refuse an MP3 or
an Ogg cut short (the LAME header's byte count; a last page that runs past the end), which libsndfile reads as far
as it goes.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from sate.errors import SateError, shell_word

if TYPE_CHECKING:  # a type only: audio imports this module
    from sate.data.audio import HeaderLog


def check_one_stream(path: Path, info: HeaderLog, quick: bool = True) -> None:
    """Refuse an Ogg or FLAC file that holds a second file behind the first (two joined with cat; an Ogg chain):
    libsndfile reads the first alone, and a talk joined from its parts was segmented and translated as its first
    part, exit 0 (thirty-first hostile pass), where two WAVs joined so are refused (`check_nothing_behind_data`).
    An Ogg's pages are walked (their headers alone: some 0.7 ms per MB). A FLAC is searched whole, but not where
    ``quick`` (`wav_info`, which reads a header alone) and a few reads say it is one stream (`_flac_one_stream`):
    they cannot see every join, so a reader of the whole file (`audio_blocks`) always searches (fix32u). Each file is
    searched once per process, however many rows or segments name it. An Ogg whose last page runs past the file's
    end (cut short: an interrupted copy or download) is refused too: libsndfile read its whole pages and stopped,
    and the part was translated as whole, exit 0 (hand33l)."""
    kind = {"OGG": "Ogg", "FLAC": "FLAC"}.get(getattr(info, "format", ""))
    if kind is None:
        return
    try:
        if kind == "FLAC" and quick:
            with open(path, "rb") as f:
                if _flac_one_stream(f):
                    return
        stamp = os.stat(path)
        found = _searched(path, kind, (stamp.st_dev, stamp.st_ino, stamp.st_size, stamp.st_mtime_ns))
    except OSError:  # a file that may not be read is named by its reader, as before
        return
    if found is None:
        return
    what, at = found
    if what == "cut headers":  # the whole pages hold the headers alone: read so, they held no audio (review33l)
        raise SateError(f"{path}: the file is cut short: its last Ogg page, at byte {at:,}, runs past its end (an "
                        "interrupted copy or download?), and the pages before it hold no audio; copy it again")
    if what == "cut":
        own = _own_name(path)
        raise SateError(f"{path}: the file is cut short: its last Ogg page, at byte {at:,}, runs past its end (an "
                        "interrupted copy or download?), and only the pages before it would be read; copy it again "
                        f"(or, where the file is all there is, read its whole pages alone: head -c {at} "
                        f"{shell_word(str(own))} > {shell_word(str(_beside(own, own.stem + '.whole.ogg')))})")
    # an Ogg's frames are the last stream's granule (of another part; INT64_MAX where serials differ), no length of
    # the first part's (review32u)
    seconds = f"the {info.frames / info.samplerate:.1f} s of audio of the first" if kind == "FLAC" and \
        info.samplerate > 0 else "the first"
    raise SateError(_second_stream(path, kind, at, seconds))


@functools.lru_cache(maxsize=1024)
def _searched(path: Path, kind: str, stamp: tuple[int, int, int, int]) -> tuple[str, int] | None:
    """("chain", byte) where the whole search finds a second stream in ``path``, a file of ``kind``, ("cut", byte)
    where an Ogg's last page from that byte runs past its end (("cut headers", byte): the pages before it hold no
    audio), or None; remembered per file as
    it is (``stamp``: device, inode, size, modification time): `sate evaluate` reads a file's header at each of its
    segments, and a FLAC searched whole costs some 3 ms per MB (review32u)."""
    with open(path, "rb") as f:
        if kind == "Ogg":
            return _ogg_walk(f)
        second = _second_flac(f)
        return None if second is None else ("chain", second)


def _own_name(path: Path) -> Path:
    """The name a command of the advice reads and writes beside: the file's own where ``path`` is a standard input
    redirected from it (`sate segment /dev/stdin < talk.ogg`: the advice wrote parts to /dev/stdin.1.ogg, hand33l),
    and there still (a file since deleted is "NAME (deleted)" there, no file's name: review33l)."""
    if str(path).startswith(_DEVICES):
        real = Path(os.path.realpath(path))
        if not str(real).startswith(_DEVICES) and real.exists():
            return real
    return path


_DEVICES = ("/dev/", "/proc/")  # no folder a user writes into


def _beside(own: Path, name: str) -> Path:
    """Where the advice writes the file ``name`` made of ``own``: beside it, or in the current folder where ``own`` is
    a device's name (a standard input redirected from a file since deleted)."""
    return Path(name) if str(own).startswith(_DEVICES) else own.with_name(name)


def _second_stream(path: Path, kind: str, at: int, seconds: str) -> str:
    """What is said of ``path``, a file of ``kind`` holding a second stream from byte ``at`` on."""
    # a chain made as one file (a radio recording, a new stream at each title) has no parts to join: the file is
    # split where the second begins (sox and libsndfile each read a chain's first stream alone; review31l)
    own = _own_name(path)
    suffix = own.suffix or f".{kind.lower()}"  # a part sox can tell the kind of by its name
    parts = [shell_word(str(_beside(own, f"{own.stem}.{n}{suffix}"))) for n in (1, 2)]
    whole = shell_word(str(own))
    return (f"{path}: another {kind} stream begins at byte {at:,}, after {seconds} (files joined with "
            f"cat{', or an Ogg chain' if kind == 'Ogg' else ''}?): sate reads one stream per file, so only "
            f"the first would be read; split it there (head -c {at} {whole} > {parts[0]}; tail -c "
            f"+{at + 1} {whole} > {parts[1]}; a third stream in the second part is named in turn) and "
            f"give the parts, or join them into one WAV (sox {parts[0]} {parts[1]} OUT.wav)")


def check_one_mp3(path: Path) -> None:
    """Refuse an MP3 whose LAME header (Xing or Info, in its first frame) declares fewer bytes than the file holds,
    where another MP3 with such a header begins: two joined with cat. libsndfile's decoder trusts the header, so
    the first file alone was read, exit 0, after mpg123's raw "Warning: Xing stream size off by more than 1%"
    (hand31l). Refuse one that holds fewer bytes than its header declares, too: an MP3 cut short (an interrupted
    download) read as far as it goes, after the same raw warning, and its first part was translated as whole, exit
    0 (hand33l). Asked before libsndfile opens the file, which prints that warning."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            start = _id3v2_end(f)
            declared = _lame_bytes(f, start)
            if declared is None:
                return
            # the bytes behind the ID3v2 tag in front against the count, as mpg123 counts them; or the whole file,
            # where a writer counted the tag (a cut of less than a frame loses no more than 26 ms). The whole file
            # alone missed a cut smaller than the tag: a podcast's cover art, 50 KB to 1 MB (review33l)
            if size - start + MP3_FRAME_BYTES < declared and abs(size - declared) > MP3_FRAME_BYTES:
                raise SateError(f"{path}: the file is cut short: it holds {size - start:,} bytes of the {declared:,} "
                                "its MP3 header (LAME's Xing or Info) declares (an interrupted copy or download?); "
                                "copy it again")
            at = start + declared
            if _lame_bytes(f, _id3v2_end(f, at)) is None:  # a tag, or nothing, after the declared bytes
                return
    except OSError:  # named by its reader
        return
    raise SateError(_second_stream(path, "MP3", at, "the first"))


MP3_FRAME_BYTES = 2881  # the largest MPEG audio frame (layer III, 320 kbit/s at 32 kHz, padded)

_LAME_AT = (13, 15, 21, 23, 36, 38)  # where an MPEG audio frame's Xing or Info header begins (its side info's size)


def _lame_bytes(f: BinaryIO, at: int) -> int | None:
    """The bytes the Xing or Info header of the MPEG audio frame at byte ``at`` declares, or None: no frame there,
    no such header, or no byte count in it."""
    f.seek(at)
    head = f.read(64)
    if len(head) < 48 or head[0] != 0xFF or head[1] & 0xE0 != 0xE0:
        return None
    k = next((k for k in _LAME_AT if head[k:k + 4] in (b"Xing", b"Info")), None)
    if k is None:
        return None
    flags = int.from_bytes(head[k + 4:k + 8], "big")
    if not flags & 2:
        return None
    count = head[k + 8 + 4 * (flags & 1):k + 12 + 4 * (flags & 1)]
    return int.from_bytes(count, "big") or None


# Where a file of one stream is looked at before it is walked whole: these fractions of it (no simple ratios, so that
# parts of equal length joined are not looked at in the same place of each), and its last PROBE_BYTES
PROBE_AT = (0.13, 0.29, 0.47, 0.61, 0.83)
PROBE_BYTES = 1 << 16


def _probe_offsets(size: int, start: int, window: int = PROBE_BYTES) -> list[int] | None:
    """Where to read ``window`` bytes each, rising, the last at the end; None where the file is small enough to be
    walked whole."""
    if size - start <= (len(PROBE_AT) + 1) * window:
        return None
    return [start + round(share * (size - start)) for share in PROBE_AT] + [size - window]


def _rising(numbers: list[tuple[int, int]]) -> bool:
    """Whether the (byte, number) pairs, in byte order, have numbers rising wherever the byte rises."""
    return all(b > a or (at_b == at_a and b == a) for (at_a, a), (at_b, b) in zip(numbers, numbers[1:], strict=False))


def _ogg_walk(f: BinaryIO) -> tuple[str, int] | None:
    """("chain", byte) where an Ogg page that begins a logical stream follows pages of another (a chain: files joined
    with cat), ("cut", byte) where the page there runs past the file's end (its header, its lacing or its body cut
    short; "cut headers" where no page before it ends an audio packet: a granule position above 0), or None; None
    too where the pages cannot be walked (a damaged file, bytes that are no page behind the last: a tag, left to its
    reader). Streams multiplexed together begin on the first pages, before any other page."""
    size, at, streaming, audio = os.fstat(f.fileno()).st_size, 0, False, False
    while True:
        f.seek(at)
        head = f.read(27)
        if head[:4] != b"OggS":  # 1 to 3 bytes of it behind the last page were "cut short" (review33l): a page is
            return None  # told by its whole mark, and a cut at a page's edge cannot be told anyway
        if len(head) < 27:
            return ("cut" if audio else "cut headers", at)
        lacing = f.read(head[26])
        if head[5] & 2 and streaming:
            return ("chain", at)
        streaming = streaming or not head[5] & 2
        end = at + 27 + head[26] + sum(lacing)
        if len(lacing) < head[26] or end > size:
            return ("cut" if audio else "cut headers", at)
        audio = audio or int.from_bytes(head[6:14], "little", signed=True) > 0  # -1: no packet ends on the page
        at = end


# A FLAC file's start: its marker and a STREAMINFO block header (type 0, its last-block flag either way, 34 bytes)
_FLAC_STARTS = (b"fLaC\x00\x00\x00\x22", b"fLaC\x80\x00\x00\x22")


def _crc8_table() -> list[int]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc << 1 ^ 0x07 if crc & 0x80 else crc << 1) & 0xFF
        table.append(crc)
    return table


_CRC8 = _crc8_table()  # FLAC's frame header check (polynomial x^8 + x^2 + x + 1)
_FLAC_BITS = {1: 8, 2: 12, 4: 16, 5: 20, 6: 24, 7: 32}  # a frame header's sample size codes


def _flac_frame(data: bytes, k: int, channels: int, bits: int) -> tuple[int, int, int] | None:
    """(variable block size: 1 or 0, its sample or frame number, its block size) of the FLAC frame header at
    ``data[k:]``, or None where there is none: its sync code, fields that agree with the stream's ``channels`` and
    ``bits`` and its CRC-8 are checked."""
    if len(data) < k + 6 or data[k] != 0xFF or data[k + 1] & 0xFE != 0xF8:  # a header's bytes alone: a frame of
        # digital silence is 11 to 14 bytes, and a file ending in one was searched whole at each call (review32u)
        return None
    size_code, rate_code = data[k + 2] >> 4, data[k + 2] & 15
    assigned, sample_code = data[k + 3] >> 4, data[k + 3] >> 1 & 7
    if not size_code or rate_code == 15 or data[k + 3] & 1 or assigned > 10 or \
            (assigned + 1 if assigned < 8 else 2) != channels or sample_code and _FLAC_BITS.get(sample_code) != bits:
        return None
    lead = data[k + 4]
    extra = next((n for n, mask in enumerate((0x80, 0xE0, 0xF0, 0xF8, 0xFC, 0xFE, 0xFF)) if lead & mask == (
        0, 0xC0, 0xE0, 0xF0, 0xF8, 0xFC, 0xFE)[n]), None)
    if extra is None:
        return None
    number = lead & (0x3F >> extra if extra else 0x7F)
    for byte in data[k + 5:k + 5 + extra]:
        if byte & 0xC0 != 0x80:
            return None
        number = number << 6 | byte & 0x3F
    i = k + 5 + extra
    if size_code in (6, 7):
        block = int.from_bytes(data[i:i + size_code - 5], "big") + 1
        i += size_code - 5
    else:
        block = 192 if size_code == 1 else 576 << size_code - 2 if size_code < 6 else 256 << size_code - 8
    i += {12: 1, 13: 2, 14: 2}.get(rate_code, 0)
    if len(data) <= i:
        return None
    crc = 0
    for byte in data[k:i]:
        crc = _CRC8[crc ^ byte]
    return (data[k + 1] & 1, number, block) if crc == data[i] else None


def _flac_one_stream(f: BinaryIO) -> bool:
    """Whether a few reads show a FLAC file to be one stream: the frames found at `PROBE_AT` have rising numbers,
    and a frame in its last bytes ends at the samples its STREAMINFO declares. A second file behind the first (two
    joined with cat) begins its frames at 0 again and ends at its own length. False where they do not, or cannot (a
    small file, a length or frame size left unknown, no frame found): then the file is searched whole, about 3 ms per
    1 MB of FLAC, 3 s at one of 490 MB (hand32u). A join these reads cannot see is searched for by the readers of
    whole files (`check_one_stream`)."""
    size = os.fstat(f.fileno()).st_size
    start = _id3v2_end(f)
    f.seek(start)
    head = f.read(42)
    if len(head) < 42 or head[:8] not in _FLAC_STARTS:
        return False
    info = int.from_bytes(head[18:26], "big")  # rate (20 bits), channels - 1 (3), bits - 1 (5), samples (36)
    channels, bits, total, fixed = (info >> 41 & 7) + 1, (info >> 36 & 31) + 1, info & (1 << 36) - 1, \
        int.from_bytes(head[8:10], "big")  # a fixed block size's stream numbers its frames: the minimum block size
    at, last = start + 4, False
    while not last:  # the metadata blocks, STREAMINFO's first, to where the frames begin
        f.seek(at)
        block = f.read(4)
        if len(block) < 4:
            return False
        last, at = bool(block[0] & 0x80), at + 4 + int.from_bytes(block[1:], "big")
    least, most = int.from_bytes(head[12:15], "big"), int.from_bytes(head[15:18], "big")  # its frames' bytes
    window = min(PROBE_BYTES, 2 * most + 64)  # a frame's header is found in this many
    offsets = _probe_offsets(size, at, window)
    if offsets is None or not total or not most or not fixed:
        return False
    seen = [(at, 0)]
    for n, probe in enumerate(offsets):
        f.seek(probe)
        data = f.read(window)
        tail = n == len(offsets) - 1  # the last frame ends where the stream's declared samples do
        frames = ((k, v, x if v else x * fixed, b) for k in _flac_syncs(data, tail)
                  if (frame := _flac_frame(data, k, channels, bits)) for v, x, b in (frame,))
        found = next((frame for frame in frames if not tail or frame[2] + frame[3] == total), None)
        if found is None:
            return False
        seen.append((probe + found[0], found[2]))
    # between two frames, no more bytes than their samples' frames (each of the minimum block size at least) may
    # hold at the largest frame's size, and the last frame is of the stream's sizes: a join whose last part has as
    # many samples as the first, its frames numbered alike, adds its bytes (review32u's noise + near-silence)
    return _rising(seen) and least <= size - seen[-1][0] <= most and all(
        b - a <= (y - x) // fixed * most for (a, x), (b, y) in zip(seen, seen[1:], strict=False))


def _flac_syncs(data: bytes, backwards: bool = False) -> Iterator[int]:
    """Where FLAC's frame sync code (0xFFF8 or 0xFFF9) stands in ``data``, first to last (``backwards``: last to
    first)."""
    k = data.rfind(b"\xff", 0, len(data) - 1) if backwards else data.find(b"\xff")
    while 0 <= k < len(data) - 1:
        if data[k + 1] & 0xFE == 0xF8:
            yield k
        k = data.rfind(b"\xff", 0, k) if backwards else data.find(b"\xff", k + 1)


def _second_flac(f: BinaryIO) -> int | None:
    """Where a second FLAC file begins inside this one, or None. The first begins at the first marker after any ID3v2
    tags in front (some taggers put one there; libsndfile skips it): a FLAC that opened so was refused as two joined
    (review31l)."""
    first = _flac_start(f, _id3v2_end(f))
    return None if first is None else _flac_start(f, first + 1)


def _flac_start(f: BinaryIO, at: int) -> int | None:
    """Where the first FLAC marker with its STREAMINFO header is in ``f`` from byte ``at`` (read 64 KiB at a time),
    or None."""
    carried = b""
    f.seek(at)
    while block := f.read(1 << 16):
        data = carried + block
        found = [k for k in (data.find(start) for start in _FLAC_STARTS) if k >= 0]
        if found:
            return at - len(carried) + min(found)
        carried = data[-7:]
        at += len(block)
    return None


def _id3v2_end(f: BinaryIO, at: int = 0) -> int:
    """Where the ID3v2 tags at the start of ``f`` (or at byte ``at``) end (``at``: there are none), as libsndfile
    skips them before it looks for the format: a 10-byte header, the size it gives (4 bytes of 7 bits), and a 10-byte
    footer where its flag says."""
    while True:
        f.seek(at)
        head = f.read(10)
        if len(head) < 10 or head[:3] != b"ID3" or any(c & 0x80 for c in head[6:]):
            return at
        at += 20 if head[5] & 0x10 else 10
        at += sum(c << 7 * (3 - n) for n, c in enumerate(head[6:]))

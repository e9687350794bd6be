"""Image checks shared by ``view_image`` and json image blocks (tools.md §9, JSON-14..23)."""

from __future__ import annotations

import base64

import pytest

from artifactize.domain.tools.images import (
    BASE64_REFUSED,
    FORMAT_REFUSED,
    IMAGE_BASE64_MAX_CHARS,
    IMAGE_MAX_BYTES,
    JPEG_MIME,
    MIME_MISMATCH,
    PNG_MIME,
    PNG_SIGNATURE,
    SIZE_REFUSED,
    WEBP_MIME,
    ImageBlock,
    ImageError,
    check_image_bytes,
    decode_base64,
    decode_base64_image,
    detect_image_mime,
)
from tests.support.images import (
    ACTL,
    APNG1,
    BMP1,
    GIF1,
    IDAT,
    IEND,
    IHDR,
    JPEG1,
    JPEG1_B64,
    JPEGLS,
    PNG1,
    TEXT,
    WEBP1,
    WEBP1_B64,
    b64,
)
from tests.support.images import png_chunk as chunk


def png_of_size(size: int) -> bytes:
    """A valid PNG of exactly ``size`` bytes, padded by a private ancillary chunk."""
    padding = size - len(PNG1) - 12
    assert padding >= 0
    return PNG_SIGNATURE + IHDR + IDAT + chunk(b"prVt", b"\0" * padding) + TEXT + IEND


def refused(message: str) -> pytest.RaisesExc[ImageError]:
    return pytest.raises(ImageError, match=f"^{message.replace('.', '[.]')}$")


def test_fixtures_are_built_as_described() -> None:
    assert PNG1.index(b"acTL") > 33  # inside the tEXt data
    assert APNG1[37:41] == b"acTL"  # the chunk type of the chunk inserted at offset 33
    assert JPEG1[:3] == b"\xff\xd8\xff"
    assert WEBP1[:4] == b"RIFF"


def test_limits() -> None:
    assert IMAGE_MAX_BYTES == 4 * 1024 * 1024
    assert IMAGE_BASE64_MAX_CHARS == 5592408  # ceil(4 MiB / 3) * 4
    assert len(b64(b"\0" * IMAGE_MAX_BYTES)) == IMAGE_BASE64_MAX_CHARS


# --- detection -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "mime"),
    [(PNG1, PNG_MIME), (JPEG1, JPEG_MIME), (WEBP1, WEBP_MIME)],
    ids=["PNG1", "JPEG1", "WEBP1"],
)
def test_supported_formats_are_detected(data: bytes, mime: str) -> None:
    assert detect_image_mime(data) == mime


def test_actl_bytes_inside_another_chunk_are_not_animation() -> None:
    assert detect_image_mime(PNG1) == PNG_MIME


@pytest.mark.parametrize(
    "data",
    [
        APNG1,
        GIF1,
        BMP1,
        JPEGLS,
        JPEGLS + JPEG1[4:],
        b"\xff\xd8\xff",
        b"",
        b"hello, world",
        PNG_SIGNATURE,
        PNG_SIGNATURE + IHDR,  # no IEND
        PNG_SIGNATURE + IHDR + IDAT,
        PNG1[:-1],  # IEND cut short
        PNG1[:40],  # truncated inside a chunk
        PNG1[:10],  # truncated inside the first chunk header
        PNG1.replace(b"IHDR", b"IHDx"),  # corrupted IHDR type
        PNG_SIGNATURE + chunk(b"IHDR", b"\0" * 12) + IEND,  # IHDR length is not 13
        PNG_SIGNATURE + TEXT + IHDR + IEND,  # IHDR is not the first chunk
        PNG_SIGNATURE + IHDR + b"\x7f\xff\xff\xff" + b"IDAT" + b"\0" * 8 + IEND,  # overrun
        PNG_SIGNATURE + IHDR + IEND[:-4],  # IEND without its CRC
        b"RIFF\0\0\0\0WEBX",
        b"RIFF\0\0\0\0WEB",
    ],
    ids=[
        "APNG1",
        "GIF1",
        "BMP1",
        "JPEGLS",
        "JPEGLS-long",
        "jpeg-prefix-only",
        "empty",
        "text",
        "signature-only",
        "no-iend",
        "no-iend-idat",
        "iend-cut",
        "truncated-chunk",
        "truncated-header",
        "corrupted-ihdr",
        "ihdr-length-12",
        "ihdr-not-first",
        "chunk-overrun",
        "iend-no-crc",
        "riff-not-webp",
        "riff-short",
    ],
)
def test_everything_else_is_refused(data: bytes) -> None:
    with refused(FORMAT_REFUSED):
        detect_image_mime(data)


def test_actl_after_iend_is_ignored_with_other_trailing_bytes() -> None:
    assert detect_image_mime(PNG1 + ACTL) == PNG_MIME


def test_actl_anywhere_as_a_chunk_type_is_refused() -> None:
    late = PNG_SIGNATURE + IHDR + TEXT + IDAT + ACTL + IEND
    with refused(FORMAT_REFUSED):
        detect_image_mime(late)


def test_crcs_are_not_checked() -> None:
    broken = PNG1[:29] + b"\0\0\0\0" + PNG1[33:]  # IHDR's CRC zeroed
    assert detect_image_mime(broken) == PNG_MIME


def test_extension_and_name_play_no_part_only_bytes() -> None:
    assert detect_image_mime(JPEG1) == JPEG_MIME  # nothing but bytes is ever passed


# --- size ------------------------------------------------------------------------------


def test_exactly_4_mib_passes() -> None:
    data = png_of_size(IMAGE_MAX_BYTES)
    assert len(data) == IMAGE_MAX_BYTES
    block = check_image_bytes(data, PNG_MIME)
    assert block.mime_type == PNG_MIME
    assert base64.b64decode(block.data_base64) == data


def test_one_byte_past_4_mib_is_refused() -> None:
    with refused(SIZE_REFUSED):
        check_image_bytes(png_of_size(IMAGE_MAX_BYTES + 1), PNG_MIME)


def test_empty_image_is_refused_as_no_data() -> None:
    with refused(SIZE_REFUSED):
        check_image_bytes(b"", None)


def test_size_is_checked_before_format() -> None:
    with refused(SIZE_REFUSED):
        check_image_bytes(b"x" * (IMAGE_MAX_BYTES + 1), None)


# --- declared MIME ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "declared"),
    [(PNG1, "image/jpeg"), (PNG1, "IMAGE/PNG"), (JPEG1, "image/webp"), (WEBP1, "")],
)
def test_declared_mime_must_equal_the_detected_one_exactly(data: bytes, declared: str) -> None:
    with refused(MIME_MISMATCH):
        check_image_bytes(data, declared)


@pytest.mark.parametrize("declared", ["image/gif", "image/png"])
def test_gif_is_unsupported_whatever_is_declared(declared: str) -> None:
    with refused(FORMAT_REFUSED):
        check_image_bytes(GIF1, declared)


@pytest.mark.parametrize("data", [BMP1, JPEGLS, APNG1])
def test_bmp_jpeg_ls_and_apng_are_unsupported_even_when_declared(data: bytes) -> None:
    with refused(FORMAT_REFUSED):
        check_image_bytes(data, PNG_MIME if data is APNG1 else JPEG_MIME)


def test_view_image_declares_nothing_and_gets_the_detected_type() -> None:
    assert check_image_bytes(WEBP1, None) == ImageBlock(WEBP_MIME, WEBP1_B64)


# --- normalized block ------------------------------------------------------------------


def test_block_json_has_the_reference_shape_and_key_order() -> None:
    block = check_image_bytes(PNG1, PNG_MIME)
    data = block.to_json()
    assert data == {"type": "image", "data": b64(PNG1), "mimeType": "image/png"}
    assert list(data) == ["type", "data", "mimeType"]
    assert "path" not in data


def test_block_is_frozen() -> None:
    block = ImageBlock(PNG_MIME, b64(PNG1))
    with pytest.raises(AttributeError):
        block.mime_type = JPEG_MIME  # type: ignore[misc]


# --- base64 ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "text", "mime"),
    [(PNG1, b64(PNG1), PNG_MIME), (JPEG1, JPEG1_B64, JPEG_MIME), (WEBP1, WEBP1_B64, WEBP_MIME)],
    ids=["PNG1", "JPEG1", "WEBP1"],
)
def test_inline_data_round_trips(data: bytes, text: str, mime: str) -> None:
    assert decode_base64_image(text, mime) == ImageBlock(mime, b64(data))


def test_unpadded_base64_is_accepted_and_canonicalized() -> None:
    unpadded = JPEG1_B64.rstrip("=")
    assert unpadded != JPEG1_B64
    assert decode_base64_image(unpadded, JPEG_MIME).data_base64 == JPEG1_B64


@pytest.mark.parametrize(
    ("text", "data"),
    [
        ("aGk=", b"hi"),
        ("aGk", b"hi"),
        ("aA==", b"h"),
        ("aA=", b"h"),
        ("aA", b"h"),
        ("aGVsbG8=", b"hello"),
    ],
)
def test_padding_is_optional_but_never_more_than_needed(text: str, data: bytes) -> None:
    assert decode_base64(text) == data


@pytest.mark.parametrize(
    "text",
    [
        "",
        "=",
        "==",
        "%%%",
        "abcd===",
        "abcd=",
        "abc==",
        "a",
        "a===",
        "aGk=aGk=",  # padding in the middle
        "data:image/png;base64,aGVsbG8=",
        " " + b64(PNG1),
        b64(PNG1) + "\n",
        b64(PNG1)[:40] + "\n" + b64(PNG1)[40:],
        "aGVsbG9=",  # nonzero unused bits in the last character
        "aB==",
        "-_-_",  # URL-safe alphabet
    ],
)
def test_invalid_base64_is_refused(text: str) -> None:
    with refused(BASE64_REFUSED):
        decode_base64_image(text, PNG_MIME)


def test_base64_text_at_the_cap_is_decoded() -> None:
    text = b64(png_of_size(IMAGE_MAX_BYTES))
    assert len(text) == IMAGE_BASE64_MAX_CHARS
    assert decode_base64_image(text, PNG_MIME).data_base64 == text


def test_base64_of_one_byte_past_4_mib_is_refused_after_decoding() -> None:
    text = b64(png_of_size(IMAGE_MAX_BYTES + 1))
    assert len(text) == IMAGE_BASE64_MAX_CHARS  # still within the text cap
    with refused(SIZE_REFUSED):
        decode_base64_image(text, PNG_MIME)


def test_over_long_base64_text_is_refused_before_decoding() -> None:
    # Not valid base64 at all: the size message proves nothing was decoded.
    with refused(SIZE_REFUSED):
        decode_base64_image("%" * (IMAGE_BASE64_MAX_CHARS + 1), PNG_MIME)


def test_inline_bytes_get_every_image_check() -> None:
    with refused(FORMAT_REFUSED):
        decode_base64_image(b64(GIF1), "image/gif")
    with refused(MIME_MISMATCH):
        decode_base64_image(b64(PNG1), JPEG_MIME)
    with refused(FORMAT_REFUSED):
        decode_base64_image(b64(APNG1), PNG_MIME)


def test_error_carries_its_message() -> None:
    with pytest.raises(ImageError) as caught:
        decode_base64_image("", PNG_MIME)
    assert caught.value.message == BASE64_REFUSED
    assert str(caught.value) == "Image requires valid base64 data."

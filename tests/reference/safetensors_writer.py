"""safetensors written by hand (the torch reference scripts may not assume the safetensors
package): u64 little-endian header length, a JSON header (dtype, shape, data_offsets relative to
the data start) padded with spaces to 8 bytes, then the raw little-endian data."""
import json
import struct

import torch

DTYPE_NAMES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16"}


def tensor_bytes(t):
    """Little-endian bytes of a float32 tensor, or the 16-bit patterns of an f16 / bf16 one."""
    flat = t.contiguous().flatten()
    if t.dtype in (torch.float16, torch.bfloat16):
        return struct.pack("<%dh" % flat.numel(), *flat.view(torch.int16).tolist())
    return struct.pack("<%df" % flat.numel(), *flat.tolist())


def write_safetensors(path, tensors):
    """tensors: name -> tensor already in its stored dtype (float32, float16 or bfloat16)."""
    header = {"__metadata__": {"format": "pt"}}
    blobs, offset = [], 0
    for name in sorted(tensors):
        data = tensor_bytes(tensors[name])
        header[name] = {"dtype": DTYPE_NAMES[tensors[name].dtype],
                        "shape": list(tensors[name].shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)

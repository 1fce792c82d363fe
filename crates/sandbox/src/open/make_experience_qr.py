#!/usr/bin/env python3
"""Writes experience_qr.jpg: the picture the sandbox answers `/wxa/get_qrcode` with.

A real baseline JPEG (grayscale, 168x168) that looks like a QR code — three finder
patterns, timing lines and fixed pseudo-random modules — but encodes nothing: the sandbox
needs an image the client and a browser accept, not a scannable code.

Each module is one 8x8 block of a single colour, so every block's DCT has only its DC
coefficient: the entropy-coded data is a DC difference per block (0 or +-128 after
quantisation, +-64 for the first) followed by an end-of-block. Two tiny Huffman tables
cover exactly those symbols. No libraries needed; running it again writes the same bytes
(checked to decode with Pillow: 168x168, mode L).
Run from this directory: python3 make_experience_qr.py
"""
import os
import random
import struct

N = 21  # modules per side (a version-1 QR code)
HERE = os.path.dirname(os.path.abspath(__file__))


def modules():
    rng = random.Random(20260401)
    dark = [[rng.random() < 0.45 for _ in range(N)] for _ in range(N)]

    def finder(r0, c0):
        for r in range(-1, 8):
            for c in range(-1, 8):
                rr, cc = r0 + r, c0 + c
                if 0 <= rr < N and 0 <= cc < N:
                    ring = max(abs(r - 3), abs(c - 3))
                    dark[rr][cc] = ring in (0, 1, 3) if 0 <= r < 7 and 0 <= c < 7 else False

    finder(0, 0)
    finder(0, N - 7)
    finder(N - 7, 0)
    for i in range(8, N - 8):
        dark[6][i] = dark[i][6] = i % 2 == 0
    return dark


def marker(code, payload=b""):
    return struct.pack(">BBH", 0xFF, code, len(payload) + 2) + payload if payload else bytes([0xFF, code])


def jpeg(dark):
    size = N * 8
    out = bytearray(b"\xff\xd8")  # SOI
    out += marker(0xE0, b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00")  # APP0
    # One quantisation table: 16 for DC, so a white block is DC +64 and a black one -64.
    out += marker(0xDB, bytes([0x00]) + bytes([16] * 64))
    out += marker(0xC0, struct.pack(">BHHB", 8, size, size, 1) + bytes([1, 0x11, 0]))  # SOF0, grey
    # DC table: categories 0, 7 (the first block's +-64) and 8 (+-128), codes 00, 01 and 10
    # (an all-ones code is not allowed). AC table: end-of-block only, code 0.
    dc_counts = [0, 3] + [0] * 14
    out += marker(0xC4, bytes([0x00]) + bytes(dc_counts) + bytes([0x00, 0x07, 0x08]))
    ac_counts = [1] + [0] * 15
    out += marker(0xC4, bytes([0x10]) + bytes(ac_counts) + bytes([0x00]))
    out += marker(0xDA, bytes([1, 1, 0x00, 0, 63, 0]))  # SOS

    bits = []
    previous = 0
    for r in range(N):
        for c in range(N):
            dc = -64 if dark[r][c] else 64
            diff = dc - previous
            previous = dc
            category = abs(diff).bit_length()
            bits += {0: [0, 0], 7: [0, 1], 8: [1, 0]}[category]
            value = diff if diff > 0 else diff - 1  # negative: ones' complement in `category` bits
            bits += [(value >> (category - 1 - i)) & 1 for i in range(category)]
            bits += [0]  # end of block
    bits += [1] * (-len(bits) % 8)  # pad with ones
    for i in range(0, len(bits), 8):
        byte = int("".join(map(str, bits[i:i + 8])), 2)
        out.append(byte)
        if byte == 0xFF:
            out.append(0x00)  # byte stuffing
    out += b"\xff\xd9"  # EOI
    return bytes(out)


with open(os.path.join(HERE, "experience_qr.jpg"), "wb") as f:
    f.write(jpeg(modules()))

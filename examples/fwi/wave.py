"""A 2-D constant-density acoustic wave equation in PyTorch, differentiable by autograd:
second order in time, fourth order in space, a Cerjan sponge as the absorbing boundary,
a Ricker source, receivers along the surface.

    p(t+dt) = d * (2 p(t) - d p(t-dt) + (v dt)^2 lap4(p(t)) + (v dt)^2 s(t))

lap4 is the fourth-order five-point Laplacian in each direction; d is 1 in the
model and falls to about 0.91 across the sponge. Thread-compatible: pure functions."""
import math

import torch
import torch.nn.functional as F


def ricker(freq_hz, nt, dt, delay=None):
    """The Ricker wavelet of peak `freq_hz`, `nt` samples of `dt` s, peak at 1.5/freq."""
    t = torch.arange(nt, dtype=torch.float32) * dt - (1.5 / freq_hz if delay is None else delay)
    a = (math.pi * freq_hz * t) ** 2
    return (1 - 2 * a) * torch.exp(-a)


def laplacian(p, inv_dx2):
    """The fourth-order Laplacian of `p` (zero outside it): five points each way."""
    q = F.pad(p, (2, 2, 2, 2))
    near = q[1:-3, 2:-2] + q[3:-1, 2:-2] + q[2:-2, 1:-3] + q[2:-2, 3:-1]
    far = q[:-4, 2:-2] + q[4:, 2:-2] + q[2:-2, :-4] + q[2:-2, 4:]
    return (-5.0 * p + (4 / 3) * near - (1 / 12) * far) * inv_dx2


def sponge(nz, nx, width, strength=0.015):
    """Cerjan's damping: 1 inside, exp(-(strength (width - i))^2) across `width` cells on
    the sides and the bottom (the surface at the top is free)."""
    def ramp(n, top):
        d = torch.ones(n)
        i = torch.arange(width, dtype=torch.float32)
        edge = torch.exp(-(strength * (width - i)) ** 2)
        if top:
            d[:width] = edge
        d[n - width:] = torch.flip(edge, [0])
        return d
    return ramp(nz, top=False)[:, None] * ramp(nx, top=True)[None, :]


class Propagator:
    """Modelling of shots on a grid of nz x nx cells of `dx` m, padded by `pad` sponge
    cells at the sides and the bottom; `nt` steps of `dt` s. Sources and receivers are
    at depth cell `depth`, positions given in model cells (x)."""

    def __init__(self, nz, nx, dx, nt, dt, freq_hz, pad=20, depth=1, device="cpu"):
        self.nz, self.nx, self.dx, self.nt, self.dt, self.pad = nz, nx, dx, nt, dt, pad
        self.depth = depth
        self.device = device
        self.damp = sponge(nz + pad, nx + 2 * pad, pad).to(device)
        self.wavelet = ricker(freq_hz, nt, dt).tolist()  # scalars, read each step

    def padded(self, v):
        """The model with its sponge cells (edge values repeated). The gradient flows to
        the model's own cells only: the sponge is not the model, and through a plain
        replicate the edge cells would gather the gradient of every sponge cell beyond."""
        pads = (self.pad, self.pad, 0, self.pad)
        edge = F.pad(v.detach()[None, None], pads, mode="replicate")[0, 0]
        hole = F.pad(v.detach()[None, None], pads)[0, 0]  # the model's cells, zeros around
        return F.pad(v[None, None], pads)[0, 0] + (edge - hole)

    def shot(self, v, source_x, receiver_x):
        """Pressure at the receivers, [len(receiver_x), nt], of a source at cell
        `source_x`; differentiable in `v` (m/s, [nz, nx])."""
        vp = self.padded(v)
        c = (vp * self.dt) ** 2
        nzp, nxp = vp.shape
        src = torch.zeros(nzp, nxp, device=self.device)
        src[self.depth, int(source_x) + self.pad] = 1.0
        src = src * c
        rec = torch.as_tensor(receiver_x, dtype=torch.long, device=self.device) + (
            self.pad + self.depth * nxp)
        d = self.damp
        prev = torch.zeros(nzp, nxp, device=self.device)
        cur = torch.zeros(nzp, nxp, device=self.device)
        out = []
        for t in range(self.nt):
            lap = laplacian(cur, 1.0 / self.dx**2)
            nxt = d * (2 * cur - d * prev + c * lap + self.wavelet[t] * src)
            out.append(nxt.reshape(-1).index_select(0, rec))
            prev, cur = cur, nxt
        return torch.stack(out, dim=1)

"""The example's true model, made by code (no download), and the smooth model it starts
from. Thread-compatible: pure functions."""
import torch
import torch.nn.functional as F


def true_model(nz=100, nx=200):
    """Velocity (m/s, [nz, nx]): a gradient from 1800 to about 3000 m/s with depth, three
    interfaces dipping to the right, a normal fault at x = 0.6 nx (the right side thrown
    down by 0.08 nz), and a salt-like ellipse of 3600 m/s."""
    z = torch.arange(nz, dtype=torch.float32)[:, None].expand(nz, nx)
    x = torch.arange(nx, dtype=torch.float32)[None, :].expand(nz, nx)
    v = 1800.0 + 1200.0 * z / nz
    throw = torch.where(x > 0.6 * nx, 0.08 * nz, 0.0)
    for depth, jump in ((0.2, 150.0), (0.35, 200.0), (0.5, 250.0)):
        interface = depth * nz + 0.08 * x * nz / nx + throw
        v = v + jump * (z > interface).float()
    salt = ((z - 0.45 * nz) / (0.1 * nz)) ** 2 + ((x - 0.33 * nx) / (0.13 * nx)) ** 2 < 1
    return torch.where(salt, torch.tensor(3600.0), v)


def smooth(v, sigma_cells):
    """`v` blurred by a Gaussian of `sigma_cells` (edges repeated): the starting model."""
    r = int(3 * sigma_cells)
    g = torch.exp(-0.5 * (torch.arange(-r, r + 1, dtype=torch.float32) / sigma_cells) ** 2)
    g = g / g.sum()
    p = F.pad(v[None, None], (r, r, r, r), mode="replicate")
    p = F.conv2d(p, g.view(1, 1, 1, -1))
    p = F.conv2d(p, g.view(1, 1, -1, 1))
    return p[0, 0]

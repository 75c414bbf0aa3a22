"""The values the client hands out: DatasetInfo and Shot (plain dataclasses)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import numpy as np

__all__ = ["DatasetInfo", "Shot"]


@dataclass
class DatasetInfo:
    """What the server says of one dataset (shot_ids only from Client.dataset, a page of
    them from Client.dataset_pages, and from Client.write)."""

    name: str
    state: str  # READY, FAILED, REBUILDING or LOADING
    error: str = ""
    n_traces: int = 0
    n_shots: int = 0
    n_samples: int = 0
    sample_interval_us: float = 0.0
    sample_format: int = 0
    shot_key: str = ""
    n_files: int = 0
    # on_bad_file: skip: the files left out of a READY dataset, "PATH: why" each.
    bad_files: List[str] = field(default_factory=list)
    format: str = ""  # "segy", "npy", "hdf5", ...
    # LOADING: the traces scanned so far of those its files hold.
    loading_traces_done: int = 0
    loading_traces_total: int = 0
    shot_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    shot_trace_counts: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    header_fields: List[str] = field(default_factory=list)
    # source_xy datasets: {shot id: (x, y)} of each shot's source; else empty.
    source_positions: Dict[int, Tuple[float, float]] = field(default_factory=dict)
    # Client.write only: the largest |sample written - given| (0 for format 5), and the
    # shots and float32 bytes written.
    write_max_error: float = 0.0
    # Client.write only: the largest |header stored - given| (SEG-Y scalars and integer
    # fields) and where it is ("shot S, trace T, NAME V stored as W"; "" when 0).
    write_max_header_error: float = 0.0
    write_max_header_error_at: str = ""
    written_shots: int = 0
    written_bytes: int = 0

    @classmethod
    def from_message(cls, msg, written=None) -> "DatasetInfo":
        """From a shotstream.v1.DatasetInfo message (and, for a write, the
        WriteShotsResponse that holds it)."""
        state = type(msg).DESCRIPTOR.fields_by_name["state"].enum_type \
            .values_by_number[msg.state].name
        return cls(name=msg.name, state=state.replace("DATASET_STATE_", ""), error=msg.error,
                   n_traces=msg.n_traces, n_shots=msg.n_shots, n_samples=msg.n_samples,
                   sample_interval_us=msg.sample_interval_us, sample_format=msg.sample_format,
                   shot_key=msg.shot_key, n_files=msg.n_files, format=msg.format,
                   bad_files=list(msg.bad_files),
                   loading_traces_done=msg.loading_traces_done,
                   loading_traces_total=msg.loading_traces_total,
                   shot_ids=np.array(msg.shot_ids, dtype=np.int64),
                   shot_trace_counts=np.array(msg.shot_trace_counts, dtype=np.int64),
                   header_fields=list(msg.header_fields),
                   source_positions={p.shot_id: (p.x, p.y) for p in msg.source_positions},
                   write_max_error=written.max_error if written else 0.0,
                   write_max_header_error=written.max_header_error if written else 0.0,
                   write_max_header_error_at=written.max_header_error_at if written else "",
                   written_shots=written.shots if written else 0,
                   written_bytes=written.sample_bytes if written else 0)

    def __repr__(self) -> str:
        return (f"DatasetInfo(name={self.name!r}, state={self.state}, n_shots={self.n_shots}, "
                f"n_traces={self.n_traces}, n_samples={self.n_samples}, "
                f"sample_interval_us={self.sample_interval_us})")


@dataclass(eq=False)
class Shot:
    """One shot gather: samples float32 (n_traces, n_samples), headers name -> array;
    trace_headers: with stream(..., trace_headers=True) each trace's raw 240-byte header,
    uint8 (n_traces, 240), big-endian as SEG-Y stores it; else None."""

    index: int  # position in the request
    shot_id: int
    samples: np.ndarray
    headers: Dict[str, np.ndarray]
    sample_interval_us: float
    trace_headers: Optional[np.ndarray] = None
    # How its samples travelled (stream(..., encoding="auto"): what the server picked).
    encoding: str = "float32"
    # stream(..., pieces=True): a part of a shot, its traces [first_trace, first_trace +
    # len(samples)) of shot_traces; headers and trace_headers come with the first part,
    # last_piece says the shot's last. A whole shot: 0, its trace count, True.
    first_trace: int = 0
    shot_traces: int = -1
    last_piece: bool = True

    def __post_init__(self) -> None:
        if self.shot_traces < 0:
            self.shot_traces = int(self.samples.shape[0]) if self.samples.ndim else 0

    def __repr__(self) -> str:
        return f"Shot(shot_id={self.shot_id}, samples={self.samples.shape})"

"""Dense integer slots for memory ids, shared by every index of one scope.

Everything in the index package is keyed by slot, not memory id: the caller maps ids to slots with
`SlotAllocator` and filters with boolean masks indexed by slot (see `arrays.py` for the mask
convention), so filters apply *before* top-k and a filtered query never loses results to an
unfiltered cut-off.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from engram_mcp.index.arrays import grown_capacity


class SlotAllocator:
    """Maps string keys (memory ids) to dense integer slots shared by all indexes.

    Released slots are tombstoned, never reused, until `compact()`: reusing a slot straight away
    would let a stale mask or an in-flight result point at a different memory.
    """

    def __init__(self, initial_capacity: int = 1024) -> None:
        self._slots: dict[str, int] = {}
        self._keys: list[str | None] = []
        self._live = np.zeros(max(initial_capacity, 1), dtype=bool)

    def slot_for(self, key: str) -> int:
        """The key's slot, allocating the next free one for a new key."""
        slot = self._slots.get(key)
        if slot is not None:
            return slot
        slot = len(self._keys)
        if slot >= len(self._live):
            self._grow(slot + 1)
        self._keys.append(key)
        self._slots[key] = slot
        self._live[slot] = True
        return slot

    def slots_for(self, keys: Iterable[str]) -> np.ndarray:
        """Slots for many keys (bulk load); allocates as needed."""
        return np.fromiter((self.slot_for(k) for k in keys), dtype=np.int64)

    def get(self, key: str) -> int | None:
        return self._slots.get(key)

    def keys(self) -> Iterable[str]:
        """The keys that hold a slot (a live view: do not write while iterating)."""
        return self._slots.keys()

    def key_at(self, slot: int) -> str | None:
        if 0 <= slot < len(self._keys):
            return self._keys[slot]
        return None

    def release(self, key: str) -> int | None:
        """Tombstone the key's slot; returns the slot (so the caller can clear its indexes)."""
        slot = self._slots.pop(key, None)
        if slot is not None:
            self._keys[slot] = None
            self._live[slot] = False
        return slot

    def compact(self) -> np.ndarray:
        """Renumber live keys densely, in slot order; returns ``old_slots`` (new slot i held
        ``old_slots[i]``). Pass it to every index's ``renumber`` before using new slots."""
        old_slots = np.flatnonzero(self._live[: len(self._keys)]).astype(np.int64)
        keys = [self._keys[s] for s in old_slots.tolist()]
        self._keys = list(keys)
        self._slots = {k: i for i, k in enumerate(keys) if k is not None}
        self._live = np.zeros(max(len(self._live), 1), dtype=bool)
        self._live[: len(keys)] = True
        return old_slots

    def export_keys(self) -> list[str | None]:
        """Slot -> key (None for a tombstone), what `from_keys` restores."""
        return list(self._keys)

    @classmethod
    def from_keys(cls, keys: list[str | None]) -> "SlotAllocator":
        """The allocator `export_keys` described (tombstones stay tombstones)."""
        alloc = cls(initial_capacity=max(len(keys), 1))
        alloc._keys = list(keys)
        alloc._slots = {k: i for i, k in enumerate(keys) if k is not None}
        if len(alloc._slots) != sum(k is not None for k in keys):
            raise ValueError("a key holds two slots")
        alloc._live[: len(keys)] = [k is not None for k in keys]
        return alloc

    @property
    def live_mask(self) -> np.ndarray:
        """Read-only view, one bool per slot ever allocated (length == ``size``). Being a view,
        it follows later releases; copy it to keep a snapshot."""
        view = self._live[: len(self._keys)]
        view.flags.writeable = False
        return view

    @property
    def size(self) -> int:
        """Slots allocated so far, tombstones included."""
        return len(self._keys)

    @property
    def live_count(self) -> int:
        return len(self._slots)

    def __len__(self) -> int:
        return len(self._slots)

    def __contains__(self, key: object) -> bool:
        return key in self._slots

    def _grow(self, needed: int) -> None:
        live = np.zeros(grown_capacity(len(self._live), needed), dtype=bool)
        live[: len(self._live)] = self._live
        self._live = live

"""Hooks on another library's noise primitives: record every noise call, or take its noise away.

An adapter (:class:`Adapter`) patches the functions or methods through which a library adds
noise. While a :class:`Recorder` is active (``with recording(mode=…)``), every call that goes
through a patched primitive becomes a :class:`NoiseCall`: where it was made (the library's own
line, and the first line outside the library: the user's), the mechanism, the Δ, ε and δ it
declared, and the value before noise. In ``"record"`` mode the library's noise is added as
usual; in ``"unnoised"`` mode the primitive returns the value before noise (so the sensitivity
search sees exactly what the library was about to noise). A call made from inside another
hooked call (a mechanism whose ``randomise`` calls its parent's) counts once: the outermost.

Outside a recorder the patched primitives call the library unchanged. Hooks are installed
once per process and stay installed (uninstall restores the originals). Inside a recorder, an
exception raised by dpwitness's own code in a hook (an adapter misreading the library) becomes an
:class:`AdapterError` naming the adapter and the line; what the library or the user's code raises
passes through unchanged (:func:`raised_by`).
"""

from __future__ import annotations

import contextvars
import functools
import importlib
import importlib.metadata
import math
import sys
import sysconfig
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FrameType, TracebackType
from typing import Any

from dpwitness.common.encoding import frame_columns

#: How a recorder treats the calls it sees.
MODES = ("record", "unnoised")


class AdapterError(RuntimeError):
    """An adapter failed (a hook could not be installed, a library's internals were not as expected).

    Reported as its own kind, never as a bug in the library.
    """


class Unsupported(Exception):
    """The input is outside the library's stated contract (its input domain, its size limits).

    The check skips such a pair: a library is not judged outside the inputs it accepts.
    ``reason`` says why (the library's own words or the adapter's, quoting no value of the table);
    ``rows`` is the number of rows the library's declared domain holds, when it declares one
    (e.g. OpenDP's ``vector_domain(…, size=1024)``): the check then builds its tables at that size.
    """

    def __init__(self, reason: str = "", *, rows: int | None = None) -> None:
        super().__init__(reason)
        self.rows = rows


@dataclass(frozen=True, eq=False)
class NoiseCall:
    """One call of a library's noise primitive.

    ``site`` is the library's line that called the primitive, ``caller`` the first line outside
    the library (the user's). ``sensitivity`` is the Δ the library declared for this call (in
    ``norm``: ``"l1"`` for Laplace/geometric noise, ``"l2"`` for Gaussian), None when the
    library declares none the hook can read. ``value`` is the value before noise (a number or
    a tuple of numbers). ``replay()`` adds the library's own noise to ``value`` once more
    (only the noise, no recomputation). ``bounds`` are the input bounds the library was given,
    when it was given some. ``invariant`` is what the library was told is not protected
    (e.g. the key sets an OpenDP margin declares invariant): both neighbours must share it, so a
    pair on which it differs is outside the library's contract (skipped, never judged).
    ``scale`` is the noise's scale (Laplace b, Gaussian σ) of a call that declares no Δ (a draw
    seen by :mod:`~dpwitness.targets.numpy_random`): the check reads the Δ it allows at the
    claimed ε from it.
    """

    library: str
    version: str
    mechanism: str
    site: str
    caller: str
    sensitivity: float | None
    epsilon: float | None
    delta: float
    norm: str
    value: Any
    bounds: tuple[float, float] | None = None
    replay: Callable[[], Any] | None = field(default=None, repr=False)
    invariant: Any = None
    shape: Any = None
    scale: float | None = None

    @property
    def signature(self) -> tuple[Any, ...]:
        """What must not change between neighbours: where, which mechanism, and its declared Δ, ε, δ."""
        return (self.library, self.mechanism, self.site, self.sensitivity, self.epsilon, self.delta)

    def describe(self) -> str:
        delta = f", δ = {self.delta:g}" if self.delta else ""
        declared = "Δ undeclared" if self.sensitivity is None else f"declared Δ = {self.sensitivity:g} ({self.norm.upper()})"
        eps = "" if self.epsilon is None else f", ε = {self.epsilon:g}"
        return f"{self.library} {self.mechanism} at {self.site} ({declared}{eps}{delta}; called from {self.caller})"


class Recorder:
    """The noise calls seen while it is active, in order; ``mode`` says whether noise is added.

    ``epsilon`` (the ε the checked function claims) and ``neighbours`` (the relation) let an
    adapter derive what a library leaves implicit, e.g. the Δ a bare OpenDP measurement allows.
    """

    def __init__(self, mode: str = "record", *, epsilon: float | None = None, neighbours: str = "add-remove") -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}")
        self.mode = mode
        self.epsilon = epsilon
        self.neighbours = neighbours
        self.calls: list[NoiseCall] = []
        self.outputs: list[Any] = []  # in "record" mode: what each call released (noise added)
        self.depth = 0
        self.adapters: tuple[Adapter, ...] = ()  # the adapters this recording installed


_active: contextvars.ContextVar[Recorder | None] = contextvars.ContextVar("dpwitness_recorder", default=None)
_install_lock = threading.Lock()


def active() -> Recorder | None:
    """The recorder in effect here, if any."""
    return _active.get()


@contextmanager
def recording(
    mode: str = "record",
    adapters: tuple[Adapter, ...] | None = None,
    *,
    epsilon: float | None = None,
    neighbours: str = "add-remove",
) -> Iterator[Recorder]:
    """Record the noise calls made inside the block (installing the adapters' hooks and pinning
    their libraries' randomness first); ``epsilon``/``neighbours``: see :class:`Recorder`.

    :param mode: ``"record"`` (default: each call is recorded and its noise added, the release
        kept in ``outputs``) or ``"unnoised"`` (each call is recorded and returns its value
        without noise); anything else raises ``ValueError``.
    :param adapters: the adapters whose hooks to install; default None: every registered
        adapter whose library has been imported in this process (:func:`imported_adapters`).
    """
    chosen = adapters if adapters is not None else imported_adapters()
    for adapter in chosen:
        adapter.ensure_installed()
    for adapter in chosen:
        try:
            adapter.pin()
        except Exception as error:  # the adapter's own code: never the library's refusal nor the user's error
            where = raised_by(error, adapter.source_files())[1]
            raise AdapterError(
                f"{adapter.name} adapter failed pinning its library's randomness ({type(error).__name__} at {where})"
            ) from error
    recorder = Recorder(mode, epsilon=epsilon, neighbours=neighbours)
    recorder.adapters = tuple(chosen)
    token = _active.set(recorder)
    try:
        yield recorder
    finally:
        _active.reset(token)


def noise_call(
    adapter: Adapter,
    *,
    mechanism: str,
    sensitivity: float | None,
    epsilon: float | None,
    delta: float,
    value: Any,
    noised: Callable[[], Any],
    unnoised: Callable[[], Any] | None = None,
    norm: str = "l1",
    bounds: tuple[float, float] | None = None,
    replay: Callable[[], Any] | None = None,
    skip_frames: int = 2,
    site: str | None = None,
    invariant: Any = None,
    caller: str | None = None,
    scale: float | None = None,
) -> Any:
    """The body of every hook: record the call, then add the noise (``noised()``) or not.

    ``unnoised()`` gives what the primitive returns without noise (default: ``value``).
    Outside a recording block (or inside a hook already recording) it only returns ``noised()``.

    :param adapter: the adapter whose hook this is: its name, version and ``package_roots``
        (to find the call site) go into the record.
    :param mechanism: the primitive's name as the report shows it (e.g. ``"laplace"``).
    :param sensitivity: the Δ the library declared for this call, in ``norm``; None when the
        hook cannot read one.
    :param epsilon: the ε the library spends on this call; None when it states none.
    :param delta: the δ of this call (None or 0 for pure ε).
    :param value: the value before noise (a number, a boolean, a sequence or an array, bytes, a
        dict, text…; stored by :func:`plain_value`, its structure by :func:`value_shape`).
    :param noised: runs the primitive as the library would (noise added).
    :param unnoised: what the primitive returns without noise in ``"unnoised"`` mode.
    :param norm: the norm of ``sensitivity``: ``"l1"`` (default; Laplace/geometric),
        ``"l2"`` (Gaussian) or ``"discrete"`` (0 when equal, 1 otherwise: randomized response).
    :param bounds: the input bounds (lower, upper) the library was given; default None: none.
    :param replay: adds the library's own noise to ``value`` once more (no recomputation), for
        the replay audit; default None: not replayable.
    :param skip_frames: how many of the hook's own stack frames to pass over before looking for
        the call site (default 2: this function and the patched primitive).
    :param site: the call site to record, overriding the one found on the stack; default None.
    :param invariant: what the library was told is not protected (hashable; equal on both
        neighbours of a pair inside its contract); default None: nothing.
    :param caller: the first line outside the library, overriding the one found on the stack; default None.
    :param scale: the noise's scale, for a call that declares no Δ (see :class:`NoiseCall`); default None.
    """
    recorder = _active.get()
    if recorder is None or recorder.depth > 0:
        return noised()
    recorder.depth += 1
    try:
        found, seen_from = call_sites(adapter.package_roots, skip_frames)
        site = site or found
        caller = caller or seen_from
        recorder.calls.append(
            NoiseCall(
                library=adapter.name,
                version=adapter.version(),
                mechanism=mechanism,
                site=site,
                caller=caller,
                sensitivity=None if sensitivity is None else float(sensitivity),
                epsilon=None if epsilon is None else float(epsilon),
                delta=float(delta or 0.0),
                norm=norm,
                value=plain_value(value),
                bounds=bounds,
                replay=replay,
                invariant=invariant,
                shape=value_shape(value, norm),
                scale=scale,
            )
        )
        if recorder.mode == "unnoised":
            return unnoised() if unnoised is not None else value
        released = noised()
        recorder.outputs.append(released)
        return released
    finally:
        recorder.depth -= 1


def plain_value(value: Any) -> Any:
    """A pre-noise value made plain and exact: a float (numbers and booleans), a tuple of floats
    (sequences and numeric arrays, flattened), bytes (kept), a dict (each value made plain), a
    data frame as a dict of its columns of numbers (each a tuple of floats; its other columns,
    keys and text, are part of its shape: :func:`value_shape`), or the object itself (text and
    anything else: compared by equality). NaN and ±∞ kept; a null (None) is NaN, alone or among
    numbers."""
    frame = frame_columns(value)
    if frame is not None:
        return dict(_frame_parts(frame)[0])
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return {key: plain_value(item) for key, item in value.items()}
    try:
        if hasattr(value, "tolist"):
            value = value.tolist()
        if isinstance(value, list | tuple):
            flat: list[float] = []
            stack = list(value)
            while stack:
                item = stack.pop(0)
                if isinstance(item, list | tuple):
                    stack[:0] = list(item)
                else:
                    flat.append(math.nan if item is None else float(item))  # a null: missing, as NaN
            return tuple(flat)
        return math.nan if value is None else float(value)
    except (TypeError, ValueError):
        return value


def value_shape(value: Any, norm: str = "l1") -> Any:
    """The structure of a pre-noise value, which must not change between neighbours: its kind
    and, for bytes (a bit vector), sequences and arrays, its length or shape. Under ``"discrete"``
    the value is one item whatever its length: only its kind. A dict's keys are not its shape
    (a key on one side only counts as 0, as in the L1/L2 distances of keyed outputs).

    A data frame's shape is its number of rows, its columns' names in order and the values of its
    columns that are not numbers (its keys: a frame whose key column differs between neighbours
    released a different key set).

    :param value: the value before noise, as the library passed it.
    :param norm: the norm of the call's Δ (``"l1"``, ``"l2"`` or ``"discrete"``).
    """
    frame = frame_columns(value)
    if frame is not None:
        keys = _frame_parts(frame)[1]
        height = len(next(iter(frame.values()), []))
        return ("frame", height, tuple(frame), tuple(sorted(keys.items())))
    if isinstance(value, bytes | bytearray | memoryview):
        return ("item",) if norm == "discrete" else ("bytes", len(bytes(value)))
    if isinstance(value, str):
        return ("item",) if norm == "discrete" else ("text",)
    if isinstance(value, Mapping):
        return ("dict",)
    if hasattr(value, "shape") and hasattr(value, "tolist") and int(getattr(value, "ndim", 0)) > 0:
        return ("array", tuple(int(n) for n in value.shape))
    if isinstance(value, list | tuple):
        return ("sequence", _nested_lengths(value))
    return ("item",) if norm == "discrete" else ("number",)


def _frame_parts(frame: Mapping[str, list[Any]]) -> tuple[dict[str, tuple[float, ...]], dict[str, tuple[Any, ...]]]:
    """A frame's columns split into those of numbers (booleans and nulls among them: tuples of
    floats, a null as NaN) and the others (keys, text: tuples of their values)."""
    numbers: dict[str, tuple[float, ...]] = {}
    others: dict[str, tuple[Any, ...]] = {}
    for name, column in frame.items():
        plain = plain_value(list(column))
        if isinstance(plain, tuple):
            numbers[name] = plain
        else:
            others[name] = tuple(column)
    return numbers, others


def _nested_lengths(value: Any) -> Any:
    if isinstance(value, list | tuple):
        return (len(value), tuple(_nested_lengths(item) for item in value if isinstance(item, list | tuple)))
    return ()


def declared_distance(mapped: Any, norm: str = "l1") -> float:
    """The Δ a stability map's output declares in ``norm``: a number as it is, or the middle of a
    tuple (l0, lp, l∞) as OpenDP's maps on grouped outputs return (lp: L1 or L2, the norm of the
    output metric); a 1-tuple's only value.

    :param mapped: what the stability map returned for one neighbouring step.
    :param norm: the norm of the noise (``"l1"`` or ``"l2"``), named in the error for another tuple.
    """
    if isinstance(mapped, tuple | list):
        if len(mapped) == 3:
            return float(mapped[1])
        if len(mapped) == 1:
            return float(mapped[0])
        raise ValueError(f"a stability map's output of {len(mapped)} values: expected a number or (l0, l{norm[-1]}, l∞)")
    return float(mapped)


def largest_distance(privacy_map: Callable[[Any], Any], epsilon: float | None, *, integer: bool | None = None) -> float | None:
    """The largest input distance d with ``privacy_map(d)`` ≤ ε, by bisection on the library's own
    map; ``integer``: the map takes whole numbers (OpenDP's u32/i32 metrics, ``DiscreteDistance``),
    bisected as integers. None (default): probed (a map refusing 1.0 but taking 1 takes integers).
    A map returning (ε, δ) is read on ε. None when ε is None; 0.0 when even distance 1 costs more.

    :param privacy_map: the measurement's privacy map (an input distance → its ε, or (ε, δ)).
    :param epsilon: the claimed ε the distance must stay within.
    :param integer: the map takes whole numbers (see above).
    """
    if epsilon is None:
        return None
    if integer is None:
        integer = not _maps(privacy_map, 1.0) and _maps(privacy_map, 1)

    def within(d: float) -> bool:
        try:
            loss = privacy_map(int(d) if integer else float(d))
        except Exception:
            return False
        loss = loss[0] if isinstance(loss, tuple) else loss
        return bool(float(loss) <= epsilon * (1 + 1e-12))

    if integer:
        lo, hi = 0, 1
        while within(hi) and hi < 2**64:
            lo, hi = hi, hi * 2
        while hi - lo > 1:
            middle = (lo + hi) // 2
            lo, hi = (middle, hi) if within(middle) else (lo, middle)
        return float(lo)
    low, high = 0.0, 1.0
    while within(high) and high < 1e300:
        low, high = high, high * 2
    for _ in range(200):
        mid = (low + high) / 2
        if mid in (low, high):
            break
        low, high = (mid, high) if within(mid) else (low, mid)
    return low if math.isfinite(low) else None


def _maps(privacy_map: Callable[[Any], Any], d: Any) -> bool:
    try:
        privacy_map(d)
    except Exception:
        return False
    return True


def call_sites(package_roots: tuple[str, ...], skip: int) -> tuple[str, str]:
    """(the innermost library line that called the primitive, the first line outside the library).

    Frames of dpwitness itself (the hooks, the check) are passed over; ``skip`` drops the hook's
    own frames (the frame of the patched primitive's caller comes next).

    :param package_roots: the library's source folders (path prefixes); a frame whose file
        starts with one of them is inside the library. Empty: every frame is outside.
    :param skip: how many frames to drop, starting with this function's caller (0: start at
        the caller).
    """
    site = caller = ""
    for frame in outside_frames(skip + 1):
        filename = frame.f_code.co_filename
        inside = any(root and filename.startswith(root) for root in package_roots)
        if inside and not site:
            site = f"{_short(filename)}:{frame.f_lineno}"
        elif not inside:
            caller = f"{_short(filename)}:{frame.f_lineno}"
            break
    return site or caller, caller


def outside_frames(skip: int = 0) -> Iterator[FrameType]:
    """The live frames from the caller outwards (innermost first), without dpwitness's own (the
    hooks, their guard wrappers, the check): where a hook finds the library line that called it.

    :param skip: how many frames to drop, starting with this function's caller (0: start at the caller).
    """
    frame: FrameType | None = sys._getframe(skip + 1)
    while frame is not None:
        if not frame.f_code.co_filename.startswith(_PACKAGE):
            yield frame
        frame = frame.f_back


#: dpwitness's own source folder (its frames are never a call site).
_PACKAGE = __file__.rpartition("/")[0].rpartition("/")[0] + "/"


def _short(filename: str) -> str:
    marker = "site-packages/"
    return filename.split(marker, 1)[1] if marker in filename else filename


class Adapter:
    """An adapter to one library: its hooks and its contract.

    Subclasses set ``name`` (as the check reports it), ``module`` (the import name),
    ``distribution`` (the package on the index), ``contract`` (one paragraph: input domain,
    size limits, internal randomness), ``max_rows`` (tables the search may build; None: no
    limit) and implement :meth:`install` (patch the primitives with :func:`noise_call`).
    ``exact_noise`` is True only for a library whose noise primitives sample exactly (on a grid
    2^k, in exact arithmetic) and round once to the output's type, as its documentation states:
    its float outputs then have no porous support (Mironov), so the check does not ask the
    audit's bit-pattern events, which are blind on outputs of full double precision, to show it.
    """

    name = ""
    module = ""
    distribution = ""
    contract = ""
    max_rows: int | None = None
    randomised = False
    exact_noise = False

    def __init__(self) -> None:
        self._installed = False
        self._originals: list[tuple[Any, str, Any]] = []
        self.package_roots: tuple[str, ...] = ()

    def importable(self) -> bool:
        import importlib.util

        try:
            return importlib.util.find_spec(self.module) is not None
        except (ImportError, ValueError):
            return False

    def version(self) -> str:
        try:
            return importlib.metadata.version(self.distribution or self.module)
        except importlib.metadata.PackageNotFoundError:
            return "unknown"

    def ensure_installed(self) -> None:
        with _install_lock:
            if self._installed:
                return
            try:
                package = importlib.import_module(self.module)
                root = getattr(package, "__file__", None) or ""
                folder = root.rpartition("/")[0] + "/"
                self.package_roots = (folder if root.endswith("__init__.py") else root,) if root else ()
                self.install()
            except AdapterError:
                self.uninstall()
                raise
            except Exception as error:
                self.uninstall()
                where = raised_by(error)[1]
                raise AdapterError(
                    f"{self.name} adapter: could not install its hooks ({type(error).__name__}: {error}; at {where})"
                ) from error
            self._installed = True

    def install(self) -> None:
        raise NotImplementedError

    def pin(self) -> None:
        """Pin the library's internal randomness (called before every recorded run, so both
        neighbours see the same draws). Default: nothing to pin."""

    def patch(self, owner: Any, attribute: str, replacement: Any) -> None:
        """Replace ``owner.attribute`` (remembering the original for :meth:`uninstall`).

        :param owner: the module or class holding the primitive.
        :param attribute: the primitive's name on ``owner``.
        :param replacement: the hook set in its place (usually a wrapper calling
            :func:`noise_call`); an inherited attribute is deleted again on uninstall. A function
            (plain, static, class method or a property's getter) is guarded: inside a recorder,
            an exception raised by dpwitness's own code in it is re-raised as an
            :class:`AdapterError` naming this adapter and the line.
        """
        own = attribute in vars(owner)
        self._originals.append((owner, attribute, vars(owner)[attribute] if own else _INHERITED))
        setattr(owner, attribute, self.guarded(replacement))

    def source_files(self) -> tuple[str, ...]:
        """The files of this adapter's own code (its class's module): a frame there is the adapter's."""
        module = sys.modules.get(type(self).__module__)
        filename = getattr(module, "__file__", None)
        return (filename,) if filename else ()

    def guarded(self, replacement: Any) -> Any:
        """``replacement`` with its exceptions sorted (see :meth:`patch`); other objects unchanged."""
        if isinstance(replacement, staticmethod):
            return staticmethod(self.guarded(replacement.__func__))
        if isinstance(replacement, classmethod):
            return classmethod(self.guarded(replacement.__func__))
        if isinstance(replacement, property):
            getter = self.guarded(replacement.fget) if replacement.fget else None
            return property(getter, replacement.fset, replacement.fdel, replacement.__doc__)
        if not callable(replacement) or isinstance(replacement, type):
            return replacement
        adapter = self

        @functools.wraps(replacement)
        def hook(*args: Any, **kwargs: Any) -> Any:
            try:
                return replacement(*args, **kwargs)
            except (Unsupported, AdapterError):
                raise
            except Exception as error:
                if _active.get() is None:
                    raise  # outside a check: exactly as the library would
                owner, where = raised_by(error, adapter.source_files())
                if owner != "dpwitness":
                    raise  # the library's refusal or the user's own error: the check sorts them
                # the type and the line only: an exception's text may quote a value of the table
                raise AdapterError(f"{adapter.name} adapter failed in its hook ({type(error).__name__} at {where})") from error

        wrapped = getattr(replacement, "__wrapped__", None)
        if wrapped is not None:
            hook.__wrapped__ = wrapped
        return hook

    def uninstall(self) -> None:
        for owner, attribute, original in reversed(self._originals):
            if original is _INHERITED:
                delattr(owner, attribute)
            else:
                setattr(owner, attribute, original)
        self._originals.clear()
        self._installed = False

    def repro_hook(self) -> str:
        """Python source for a standalone script: patch the primitives so that each call appends
        ``(site, mechanism, declared Δ, value before noise)`` to ``CALLS`` and returns the value
        unnoised. Uses only the library (no dpwitness)."""
        return ""


_INHERITED = object()
_REGISTRY: list[Adapter] = []


def register(adapter: Adapter) -> Adapter:
    """Make ``adapter`` one that :func:`recording` installs when its library is importable."""
    if not any(existing.name == adapter.name for existing in _REGISTRY):
        _REGISTRY.append(adapter)
    return adapter


def registered() -> tuple[Adapter, ...]:
    return tuple(_REGISTRY)


def available_adapters() -> tuple[Adapter, ...]:
    """The registered adapters whose library is installed in this interpreter."""
    return tuple(adapter for adapter in _REGISTRY if adapter.importable())


def imported_adapters() -> tuple[Adapter, ...]:
    """The registered adapters whose library has been imported in this process (by the user's
    code: a library installed but never imported is left alone, so a broken one cannot fail a check)."""
    return tuple(adapter for adapter in _REGISTRY if adapter.module and adapter.module in sys.modules)


#: Where the standard library and installed packages live: frames there are helpers (numpy,
#: polars…), never the library under check, dpwitness or the user's code.
_HELPER_ROOTS = tuple(
    dict.fromkeys(
        folder.rstrip("/") + "/"
        for key in ("stdlib", "platstdlib", "purelib", "platlib")
        if (folder := sysconfig.get_paths().get(key))
    )
)


def raised_by(error: BaseException, own: tuple[str, ...] = ()) -> tuple[str, str]:
    """Whose code raised ``error``, and where: ``("dpwitness", line)`` (dpwitness itself, or the
    files ``own``: an adapter's own code), ``("library", line)`` (a registered adapter's library), ``("user", line)`` (the
    user's code) or ``("library", "")`` when only helpers' frames (stdlib, other installed
    packages) are on its traceback. The innermost frame that is not a helper's decides; lines
    are ``file:line`` with site-packages' prefix dropped."""
    frames: list[TracebackType] = []
    tb = error.__traceback__
    while tb is not None:
        frames.append(tb)
        tb = tb.tb_next
    roots = tuple(root for adapter in _REGISTRY for root in adapter.package_roots if root)
    for tb in reversed(frames):
        filename = tb.tb_frame.f_code.co_filename
        where = f"{_short(filename)}:{tb.tb_lineno}"
        if filename.startswith(_PACKAGE) or filename in own:
            return "dpwitness", where
        if any(filename.startswith(root) for root in roots):
            return "library", where
        if filename.startswith("<") or filename.startswith(_HELPER_ROOTS):
            continue
        return "user", where
    return "library", ""


__all__ = [
    "MODES",
    "Adapter",
    "AdapterError",
    "NoiseCall",
    "Recorder",
    "Unsupported",
    "active",
    "available_adapters",
    "call_sites",
    "declared_distance",
    "imported_adapters",
    "largest_distance",
    "noise_call",
    "raised_by",
    "recording",
    "register",
    "registered",
    "value_shape",
]

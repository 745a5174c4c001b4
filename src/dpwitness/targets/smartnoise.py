"""The SmartNoise SQL adapter (1.0): a hook on its mechanisms' ``release``.

What the hook sees: each value an SQL query releases (``Laplace.release``/``Gaussian.release``
under ``snsql.sql._mechanisms``, one value per call), the mechanism's ε and δ and the value
before noise. Declared Δ: for Laplace, scale·ε (SmartNoise searches OpenDP for the scale at which
the clamped sum over its bounds costs ε at ``max_contrib``, so scale·ε is the Δ it assumed); the
Gaussian's is not readable (audited, not searched). SmartNoise's own noise goes through
OpenDP's measurements; a value seen here is not counted again by the OpenDP adapter.

Contract: input: the table the query reads, with the types and bounds its metadata declares;
no size limit; internal randomness: only the noise, as long as rare groups are not censored
(``censor_dims``: a noisy threshold drawn for each group, which the adapter cannot pin, so it
makes such a query ``Unsupported``; declare ``censor_dims: False``, or check ungrouped queries).
"""

from __future__ import annotations

from typing import Any

from dpwitness.targets.hooks import Adapter, Unsupported, active, noise_call, register
from dpwitness.targets.opendp import non_nan_atoms


class SmartNoiseSQLAdapter(Adapter):
    name = "smartnoise-sql"
    module = "snsql"
    distribution = "smartnoise-sql"
    contract = (
        "input: the table as its metadata declares it (types, bounds); no size limit; randomness: only the noise, "
        "unless rare groups are censored (censor_dims: a noisy threshold per group, Unsupported)"
    )

    def install(self) -> None:
        import snsql.sql._mechanisms.gaussian as gaussian
        import snsql.sql._mechanisms.laplace as laplace

        for cls, norm in ((laplace.Laplace, "l1"), (gaussian.Gaussian, "l2")):
            self.patch(cls, "release", self._hook(vars(cls)["release"], norm))
            if "threshold" in vars(cls):
                self.patch(cls, "threshold", _censoring_refused(vars(cls)["threshold"]))

    def repro_hook(self) -> str:
        return """
import sys
import snsql.sql._mechanisms.gaussian as _gaussian
import snsql.sql._mechanisms.laplace as _laplace

CALLS = []


def _unnoised_release(mech, vals):
    frame = sys._getframe(1)
    site = f"{frame.f_code.co_filename}:{frame.f_lineno}"
    for value in vals:
        CALLS.append((site, type(mech).__name__, (mech.scale or 0) * mech.epsilon, value))
    return list(vals)


_laplace.Laplace.release = _unnoised_release
_gaussian.Gaussian.release = _unnoised_release
"""

    def _hook(self, original: Any, norm: str) -> Any:
        adapter = self

        def release(mech: Any, vals: Any) -> Any:
            declared = None if norm == "l2" or mech.scale is None else float(mech.scale) * float(mech.epsilon)

            def one(value: Any) -> Any:
                def noised() -> Any:
                    return original(mech, [value])[0]

                replay = noised
                if norm == "l1" and active() is not None:
                    replay = _laplace_replay(mech.scale, value)
                return noise_call(
                    adapter,
                    mechanism=f"{type(mech).__name__} (scale {mech.scale:.6g})",
                    sensitivity=declared,
                    epsilon=mech.epsilon,
                    delta=mech.delta if norm == "l2" else 0.0,
                    value=value,
                    noised=noised,
                    norm=norm,
                    replay=replay,
                )

            return [one(value) for value in list(vals)]

        return release


def _laplace_replay(scale: float, value: Any) -> Any:
    """Only the noise: the OpenDP measurement SmartNoise's Laplace.release builds, built once."""
    import opendp.prelude as dp

    dp.enable_features("floating-point", "contrib")
    measurement = dp.m.make_laplace(non_nan_atoms(dp), dp.absolute_distance(T=float), scale)
    return lambda: measurement(float(value))


def _censoring_refused(threshold: property) -> property:
    def read(mech: Any) -> Any:
        if active() is not None:
            raise Unsupported("SmartNoise censors rare groups with a noisy threshold (randomised): set censor_dims: False")
        return threshold.fget(mech) if threshold.fget is not None else None

    return property(read)


ADAPTER = register(SmartNoiseSQLAdapter())

"""Generate the example tables the README, the guide and the docs' commands use (no ../shared needed).

    python3 examples/make_examples.py          # rewrites examples/people.csv and examples/purchases.parquet

people.csv: 2,000 generated people, one row each, with the columns the guide's commands name
(``person_id, age, sex, hours_per_week, town, education, income, capital_gain``; ``capital_gain``
is empty for about 2% of rows, as Adult's missing values are). purchases.parquet: 6,000 purchases by
those people (several rows per person: ``person_id, amount, category``), for the privacy-unit
examples. Fixed seed: the files are the same on every run. Nothing here comes from real people.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
TOWNS = ["Ashby", "Brill", "Crewe", "Dent"]
EDUCATION = ["HS-grad", "Some-college", "Bachelors", "Masters", "Doctorate"]
CATEGORIES = ["books", "food", "garden", "tools"]


def people(n: int = 2_000, seed: int = 2026) -> list[dict[str, object]]:
    """The people table as rows (ages 17–90, hours 1–99, capital gains 0–99,999 or missing)."""
    rng = np.random.default_rng(seed)
    ages = np.clip(np.round(rng.gamma(shape=7.5, scale=5.2, size=n) + 17), 17, 90).astype(int)
    hours = np.clip(np.round(rng.normal(40, 12, size=n)), 1, 99).astype(int)
    sex = rng.choice(["F", "M"], size=n)
    town = rng.choice(TOWNS, size=n, p=[0.4, 0.3, 0.2, 0.1])
    education = rng.choice(EDUCATION, size=n, p=[0.35, 0.3, 0.2, 0.1, 0.05])
    rich = rng.random(n) < 0.1 + 0.15 * (education == "Masters") + 0.3 * (education == "Doctorate")
    gain = np.where(rng.random(n) < 0.9, 0, np.round(rng.exponential(5_000, size=n))).clip(0, 99_999).astype(int)
    missing = rng.random(n) < 0.02
    return [
        {
            "person_id": i,
            "age": int(ages[i]),
            "sex": str(sex[i]),
            "hours_per_week": int(hours[i]),
            "town": str(town[i]),
            "education": str(education[i]),
            "income": ">50K" if rich[i] else "<=50K",
            "capital_gain": "" if missing[i] else int(gain[i]),
        }
        for i in range(n)
    ]


def purchases(n: int = 6_000, people: int = 2_000, seed: int = 2027) -> dict[str, list[object]]:
    """Purchases as columns: a person has 0 to about 10 of them, amounts 1–800 (some above the 500 bound)."""
    rng = np.random.default_rng(seed)
    who = np.sort(rng.integers(0, people, size=n))
    return {
        "person_id": [int(p) for p in who],
        "amount": [float(a) for a in np.round(rng.lognormal(3.5, 0.9, size=n).clip(1, 800), 2)],
        "category": [str(c) for c in rng.choice(CATEGORIES, size=n)],
    }


def main() -> None:
    rows = people()
    with (HERE / "people.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    import polars as pl

    pl.DataFrame(purchases()).write_parquet(HERE / "purchases.parquet", statistics=False)
    print(f"wrote {HERE / 'people.csv'} ({len(rows)} rows) and {HERE / 'purchases.parquet'}")


if __name__ == "__main__":
    main()

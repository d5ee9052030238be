"""``python -m wheelwise_demo``: print which build of wheelwise-demo is installed."""

from __future__ import annotations

from wheelwise_demo import describe


def main() -> None:
    print(describe())


if __name__ == "__main__":
    main()

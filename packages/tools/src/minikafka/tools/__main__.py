"""``python -m minikafka.tools``: the client tools alone (``minikafka`` has them too)."""

from ._cli import main

if __name__ == "__main__":
    main()

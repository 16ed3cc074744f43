"""``python -m minikafka.broker`` is the ``minikafka`` command."""

from ._cli import main

if __name__ == "__main__":
    main()

"""Entry point of ``make run``; the work is in ``edgeproxy.local.runner``."""

from edgeproxy.local.runner import main

if __name__ == "__main__":
    main()

"""Entry point of ``make run``; the work is in ``edgeproxy_dev.runner``."""

from edgeproxy_dev.runner import main

if __name__ == "__main__":
    main()

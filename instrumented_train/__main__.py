"""torchrun --standalone --nproc_per_node=N -m instrumented_train [flags]"""

from __future__ import annotations

import sys

from torch.distributed.elastic.multiprocessing.errors import record

from instrumented_train.config import ConfigError
from instrumented_train.flags import parse_config
from instrumented_train.run import run


@record  # a failure on any rank is reported by torchrun with that rank's error
def main() -> int:
    try:
        cfg = parse_config(sys.argv[1:])
        run(cfg)
    except ConfigError as e:
        print(f"instrumented_train: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

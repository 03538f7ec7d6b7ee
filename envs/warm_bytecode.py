"""Write bytecode for the modules the pipeline's jobs import, once, at set-up.

uv installs without compiling (pip compiles every file by default). Where PYTHONDONTWRITEBYTECODE is set,
as on these CI machines, Python then never caches what it compiles, and every job compiles torch's,
pandas' and transformers' modules again at import (a smoke run took 457 s instead of 96 s). Compiling
all 13,000 files of the environment (`uv pip sync --compile-bytecode`) took 67 s of set-up on 2 cores;
importing what the jobs import with bytecode writing on takes about 24 s and gives the same run time.
Run by `make setup` with PYTHONDONTWRITEBYTECODE cleared for this one process only.
"""

import matplotlib

matplotlib.use("Agg")

import jinja2  # noqa: E402,F401
import matplotlib.pyplot  # noqa: E402,F401
import numpy  # noqa: E402,F401
import pandas  # noqa: E402,F401
import psutil  # noqa: E402,F401
import snakemake.cli  # noqa: E402,F401
import snakemake.script  # noqa: E402,F401
import torch  # noqa: E402,F401
import torch.nn.functional  # noqa: E402,F401
import torch.utils.checkpoint  # noqa: E402,F401
import yaml  # noqa: E402,F401
from transformers import GPT2Config, GPT2LMHeadModel, GPT2TokenizerFast, PreTrainedTokenizerFast  # noqa: E402,F401

import adbench.jobs  # noqa: E402,F401

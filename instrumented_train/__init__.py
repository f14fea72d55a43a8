"""A torchrun training harness (DDP, ZeRO-1/2/3) that writes one profiler trace per rank."""

"""P family: what fp16, bf16 and fp32 can hold, loss scaling, and swamping of small updates."""

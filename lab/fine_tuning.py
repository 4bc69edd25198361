"""What every fine-tuning in the lab shares: AdamW with a linear warm-up and decay, and one clipped step."""

from __future__ import annotations

from typing import Any


def adamw_with_warmup(model: Any, learning_rate: float, total_steps: int, warmup_share: float) -> tuple[Any, Any]:
    """AdamW (weight decay 0.01), its rate rising linearly over the first `warmup_share` of the steps, then
    falling linearly to 0 at the last."""
    import torch

    optimiser = torch.optim.AdamW(model.parameters(), lr=learning_rate, weight_decay=0.01)
    warmup = max(1, int(total_steps * warmup_share))
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser,
        lambda step: min((step + 1) / warmup, max(0.0, (total_steps - step) / max(1, total_steps - warmup))),
    )
    return optimiser, schedule


def take_step(model: Any, loss: Any, optimiser: Any, schedule: Any) -> None:
    """Back-propagate, clip the gradient's norm at 1, step the optimiser and the schedule."""
    import torch

    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimiser.step()
    schedule.step()
    optimiser.zero_grad()

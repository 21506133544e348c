"""Prints every scalar of a TensorBoard log directory as read by TensorBoard's
own event reader: one line per tag, `step:value` pairs in step order."""
import sys

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

acc = EventAccumulator(sys.argv[1])
acc.Reload()
for tag in sorted(acc.Tags()["scalars"]):
    print(tag, " ".join(f"{e.step}:{e.value:.6g}" for e in acc.Scalars(tag)))

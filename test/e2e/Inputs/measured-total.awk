# Reads `loom-run train --memory-stats` output (one or more runs) and sums
# rank 0's measured bytes per run: parameters, optimizer state, inputs,
# outputs and the peak of temporaries.
#   -v budget=B   fails unless every run's total is at most B bytes
#   -v falling=1  fails unless the runs' totals fall strictly, in order
/^memory of rank 0:/ {
  params = $6; state = $10; inputs = $13; outputs = $16
}
/^temporaries of rank 0: peak/ {
  totals[n++] = params + state + inputs + outputs + $6
}
END {
  if (n == 0) { print "no --memory-stats output"; exit 1 }
  for (i = 0; i < n; i++) {
    if (budget != "" && totals[i] > budget) {
      printf "run %d needs %d bytes, over the budget of %d\n", i + 1, totals[i], budget
      exit 1
    }
    if (falling && i > 0 && totals[i] >= totals[i - 1]) {
      printf "run %d needs %d bytes, not less than run %d's %d\n", i + 1, totals[i], i, totals[i - 1]
      exit 1
    }
  }
  if (budget != "")
    printf "fits the budget of %d bytes: %d run(s), largest %d\n", budget, n, totals[0]
  if (falling)
    printf "%d runs, measured totals falling: %d", n, totals[0]
  if (falling) { for (i = 1; i < n; i++) printf " > %d", totals[i]; printf "\n" }
}

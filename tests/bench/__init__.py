"""Each benchmark package's tests, in a folder named as its package under chateval/bench/."""

"""Node quarantine (issue 26, part 3): nodes that keep failing a set's groups are avoided for a while."""

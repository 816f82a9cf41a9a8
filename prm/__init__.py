"""The process reward model in plain PyTorch. No Django imports: it runs alone on a GPU box."""

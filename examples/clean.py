"""The same script, device-agnostic: devlint reports nothing."""
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2).to(device)
model.load_state_dict(torch.load("checkpoint.pt", map_location="cpu"))

inputs = torch.randn(8, 4)
inputs = inputs.to(device)
outputs = model(inputs)

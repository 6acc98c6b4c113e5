"""bench/peers/peer_language_models.py: the PyTorch peers of Glassbox's LSTM
language models (nets/lstm_lm.cpp, registered as LSTM, LSTMLarge and
LSTMSmall): the word_language_model example's RNNModel layout, encoder
(nn.Embedding), rnn (nn.LSTM, time-major), decoder (nn.Linear), with
dropout on the embedding, between the LSTM's layers and before the decoder
(Zaremba et al., 2014). Initialised as Glassbox initialises its layers:
the embedding from U(-0.1, 0.1) (layers/embedding.h), the LSTM and the
decoder by PyTorch's defaults, U(-1/sqrt(fan_in), 1/sqrt(fan_in)), which
Glassbox's kFanInUniform draws too (not the same numbers: another generator).

Importing this module does not import torch; build() does.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class LanguageModelSpec:
    name: str          # Glassbox's name (nets/registry.cpp)
    vocabulary: int
    hidden: int        # H, also the embedding's size
    layers: int
    steps: int         # T: time steps per window
    dropout: float
    batch: int = 20    # B: Glassbox's default on both devices

    def params(self):
        """The parameter count, as Glassbox's summary prints it."""
        lstm = sum(4 * self.hidden * (self.hidden + self.hidden) + 8 * self.hidden for _ in range(self.layers))
        return self.vocabulary * self.hidden + lstm + self.hidden * self.vocabulary + self.vocabulary

    def build(self):
        return RNNModel(self)


LANGUAGE_MODELS = [
    LanguageModelSpec("LSTM", 10000, 650, 2, 35, 0.5),
    LanguageModelSpec("LSTMLarge", 10000, 1500, 2, 35, 0.65),
    LanguageModelSpec("LSTMSmall", 10000, 200, 2, 20, 0.0),
]


def find_language_model(name):
    """The spec of `name` (any case), or None."""
    return next((m for m in LANGUAGE_MODELS if m.name.lower() == name.lower()), None)


def RNNModel(spec):
    """The model of `spec`; forward(tokens (T, B) int64, state) -> (logits (T, B, V), state)."""
    import torch.nn as nn

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.drop = nn.Dropout(spec.dropout)
            self.encoder = nn.Embedding(spec.vocabulary, spec.hidden)
            self.rnn = nn.LSTM(spec.hidden, spec.hidden, spec.layers, dropout=spec.dropout if spec.layers > 1 else 0.0)
            self.decoder = nn.Linear(spec.hidden, spec.vocabulary)
            if self.encoder.weight.device.type != "meta":
                nn.init.uniform_(self.encoder.weight, -0.1, 0.1)

        def forward(self, tokens, state):
            x = self.drop(self.encoder(tokens))
            y, state = self.rnn(x, state)
            return self.decoder(self.drop(y)), state

        def zero_state(self, batch, device):
            import torch
            shape = (spec.layers, batch, spec.hidden)
            return (torch.zeros(shape, device=device), torch.zeros(shape, device=device))

    return Model()

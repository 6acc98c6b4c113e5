// nets/lstm_lm.cpp: the LSTM language model of Zaremba, Sutskever and Vinyals
// (2014), "Recurrent Neural Network Regularization": an embedding, stacked
// LSTM layers and a softmax over the vocabulary, with dropout only on the
// connections that are not recurrent (into the first layer, between layers,
// out of the last). Names follow PyTorch's word_language_model example
// (encoder, rnn, decoder), so checkpoints carry its keys: encoder.weight,
// rnn.weight_ih_l0, ..., decoder.weight, decoder.bias.
#include "graph/builder.h"
#include "layers/lstm/lstm.h"
#include "nets/nets.h"

namespace glassbox {

Graph lstm_language_model(const LstmLmConfig& c, int batch) {
  GraphBuilder g;
  const Value tokens = g.input("tokens", {c.steps, batch}, DType::kInt32);
  const Value labels = g.input("labels", {c.steps, batch}, DType::kInt32);  // the next token at each step
  Value x = g.embedding(tokens, {.vocabulary = c.vocabulary, .dim = c.hidden}, "encoder");       // (T, B, H)
  if (c.dropout > 0) x = g.dropout(x, {.p = c.dropout}, "drop_in");
  // Truncated backpropagation through time: each window starts from the
  // state the last one ended with (Graph::reset_carried_state at an epoch's start).
  x = g.append(std::make_unique<Lstm>("rnn", Lstm::Options{.hidden = c.hidden, .layers = c.layers,
                                                          .dropout = c.dropout, .carry_state = true}),
               {x});                                                                                // (T, B, H)
  if (c.dropout > 0) x = g.dropout(x, {.p = c.dropout}, "drop_out");
  const Value logits =
      g.linear(x, {.out_features = c.vocabulary, .over_last_dim = true}, "decoder");              // (T, B, V)
  return std::move(g).build(g.softmax_cross_entropy(logits, labels));
}

}  // namespace glassbox

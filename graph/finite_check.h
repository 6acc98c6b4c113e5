// graph/finite_check.h: a step whose loss is not a finite number stops whoever
// runs steps, saying which step and where the first non-finite value appeared.
//
//   for (int64_t step = 1; ...; ++step) {
//     ... forward, backward, update ...
//     const float loss = checked_loss(ctx, graph, step);   // throws NumericalError
//   }
#pragma once

#include <cstdint>
#include <string>

#include "graph/graph.h"

namespace glassbox {

// The loss of the last forward (waits for the device). If it is NaN or
// infinite, throws NumericalError: "step 12: the loss is nan; first non-finite
// output: conv3 (Conv2d); non-finite parameters: fc6.weight, ...".
float checked_loss(Context& ctx, Graph& graph, int64_t step);

// checked_loss's check of a loss read already (tensor/step_readback.h):
// returns it where finite. Otherwise throws NumericalError; the places it
// names (describe_non_finite) are the graph's now, `later` steps after
// `step`, which the message says where later > 0.
float check_loss_value(Context& ctx, Graph& graph, int64_t step, float loss, int64_t later = 0);

// Where non-finite values are in the graph now, in words: the inputs, the
// parameters, and the outputs of one more forward (in `phase`, or the phase
// the graph was compiled for), each checked as soon as its layer has run, because with
// memory reuse an output's memory is handed on once its readers are done.
// Copies every tensor to the host and, in a training graph, moves batch-norm
// running statistics once more: for diagnosis after a failure, never inside a
// step. "" if none.
std::string describe_non_finite(Context& ctx, Graph& graph);
std::string describe_non_finite(Context& ctx, Graph& graph, Phase phase);

// A non-finite value in words: "nan", "inf" or "-inf" (printf's "-nan" says nothing more).
const char* non_finite_name(float value);
// "; fp16 holds values up to 65504, ..." where ctx computes in fp16, the usual
// cause of a non-finite value from finite weights; "" otherwise.
std::string fp16_range_note(const Context& ctx);

// Where non-finite values are after a whole training step (forward and
// backward), in words: the first layer output in forward order, the first
// activation gradient in backward order, and the parameter gradients. Needs
// every value still in memory after the step: compile with
// MemoryReuse::kOff (throws Error otherwise). Copies every tensor to the
// host: for `glassbox train --check-numerics`, never in a timed step. "" if none.
// `gradients` says which gradients are checked besides the outputs:
//   kAll: activation and parameter gradients;
//   kParameters: the parameter gradients only, for an fp16 step the loss
//     scaler applied: a scaled 16-bit activation gradient may overflow where
//     a ReLU or a max pool then masks it off, so that it reaches no weight
//     (as with PyTorch's GradScaler, the step is sound);
//   kNone: for an fp16 step whose scaled gradients overflowed and which the
//     loss scaler skipped (optim/loss_scaler.h), where non-finite gradients
//     are expected and harm nothing.
enum class StepGradients { kAll, kParameters, kNone };
std::string describe_non_finite_step(Context& ctx, const Graph& graph, StepGradients gradients = StepGradients::kAll);

}  // namespace glassbox

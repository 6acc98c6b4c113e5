// graph/fusion.h: which ReLUs a compiled graph fuses into their producers.
//
// Note [A ReLU fused into its producer]: a ReLU after a convolution (AlexNet,
// VGG, Overfeat: no batch norm between them) is one more pass over the
// convolution's output, reading and writing it. A convolution applies
// max(0, .) as it writes its output for no extra pass: oneDNN as a post-op of
// its forward primitive, cuDNN in cudnnConvolutionBiasActivationForward. So
// where a ReLU writes its output over its producer's (the memory plan runs it
// in place: the ReLU is that value's only reader, graph/memory_plan.h) and
// the producer can (Layer::can_fuse_relu), the graph has the producer apply
// the ReLU and skips the ReLU's forward. Both values are then one block
// holding max(0, .): the producer's value reads as the ReLU's. Backward is
// unchanged: the ReLU's backward reads its output, as it does unfused.
// CompileOptions::fusion (`--no-fusion`) turns it off, to compare.
#pragma once

#include <vector>

#include "graph/graph.h"
#include "graph/memory_plan.h"

namespace glassbox {

// Per node: for a ReLU whose forward its producer does, that producer's
// node index; -1 otherwise. `layers` in topological order, not yet prepared.
std::vector<int> plan_relu_fusion(const Context& ctx, const std::vector<Node>& nodes, const std::vector<int>& layers,
                                  const MemoryPlan& plan);

}  // namespace glassbox

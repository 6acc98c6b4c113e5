"""bench/probes/torch_linear_passes.py: a linear layer's three products in
PyTorch on the CPU (torch.matmul on MKL), 2 threads: forward x w^T,
backward-data dy w, backward-weights dW += dy^T x, in GFLOP/s (median of 11
after 3 untimed): the MKL figures to set beside bench/probes/linear_dx_tiles.cpp
and linear_dw_padding.cpp:

    python3 bench/probes/torch_linear_passes.py
"""
import torch, time
torch.set_num_threads(2)
for n,i,o in [(64,4096,2048),(64,2048,1024),(64,784,4096),(256,4096,2048)]:
    w=torch.randn(o,i); dy=torch.randn(n,o); x=torch.randn(n,i); dw=torch.zeros(o,i)
    fl=2*n*i*o
    def t(f):
        for _ in range(3): f()
        s=[]
        for _ in range(11):
            a=time.perf_counter(); f(); s.append(time.perf_counter()-a)
        return fl/sorted(s)[5]/1e9
    print(n,i,o,"fwd %.1f dx %.1f dW %.1f"%(t(lambda: x@w.t()), t(lambda: dy@w), t(lambda: dw.addmm_(dy.t(),x))))

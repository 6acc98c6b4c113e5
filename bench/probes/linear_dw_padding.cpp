// bench/probes/linear_dw_padding.cpp: a linear layer's weight gradient,
// dW += dy^T x, on oneDNN's sgemm, a product per thread over blocks of dW's
// rows (as layers/linear/linear.cpp runs it), with x's rows, dW's rows, or both 16
// floats further apart (padded copies made before timing). It showed that the
// 4 KiB stride costs dW little. Not part of the build:
//
//   g++ -O2 -fopenmp bench/probes/linear_dw_padding.cpp -o /tmp/dwp -ldnnl && OMP_NUM_THREADS=2 /tmp/dwp
//
// Each figure is the median of 11 products after 2 untimed ones, in GFLOP/s;
// every shape twice.
#include <omp.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <vector>
#include "oneapi/dnnl/dnnl.h"
double med(const std::function<void()>& f){f();f();std::vector<double> s;for(int i=0;i<11;++i){auto t=std::chrono::steady_clock::now();f();s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now()-t).count());}std::sort(s.begin(),s.end());return s[5];}
int main(){
  struct L{int n,in,out;}; L ls[]={{32,4096,2048},{64,4096,2048},{128,4096,2048},{64,2048,1024},{64,9216,4096},{64,4096,4096},{64,784,4096},{64,4096,1000}};
  for(auto l: ls){
    int n=l.n,in=l.in,out=l.out,T=omp_get_max_threads();
    std::vector<float> dy(size_t(n)*out,0.1f),x(size_t(n)*in,0.5f),dw(size_t(out)*in), dwp(size_t(out)*(in+16));
    std::vector<float> xp(size_t(n)*(in+16),0.5f);
    double fl=2.0*n*in*out;
    auto run=[&](const float* xx,int ldx,float* c,int ldc){ int blk=((out+T-1)/T+15)/16*16;
      #pragma omp parallel for
      for(int b=0;b<out;b+=blk){int e=std::min(out,b+blk); dnnl_sgemm('T','N',e-b,in,n,1.f,dy.data()+b,out,xx,ldx,1.f,c+size_t(b)*ldc,ldc);} };
    for(int r=0;r<2;++r)
    std::printf("%4d x %5d -> %5d dW current %6.1f  x padded %6.1f  dW padded %6.1f  both %6.1f\n",n,in,out,
      fl/med([&]{run(x.data(),in,dw.data(),in);})/1e9, fl/med([&]{run(xp.data(),in+16,dw.data(),in);})/1e9,
      fl/med([&]{run(x.data(),in,dwp.data(),in+16);})/1e9, fl/med([&]{run(xp.data(),in+16,dwp.data(),in+16);})/1e9);
  }
}

#include "train/san_ops.h"

#include <ATen/Parallel.h>

#include <cmath>
#include <vector>

namespace needle::train {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr float kRmsEps = 1e-6f;
constexpr int64_t kGrain = 64;  // tokens per parallel chunk

// The fused loops handle contiguous float32 CPU tensors; anything else takes
// the reference path (autograd through libtorch's own ops).
bool Fusable(std::initializer_list<const torch::Tensor*> ts) {
  for (const torch::Tensor* t : ts) {
    if (!t->device().is_cpu() || t->scalar_type() != torch::kFloat32) return false;
  }
  return true;
}

float Dot(const float* a, const float* b, int64_t d) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};  // independent partial sums: vectorisable
  int64_t k = 0;
  for (; k + 8 <= d; k += 8)
    for (int l = 0; l < 8; ++l) acc[l] += a[k + l] * b[k + l];
  float s = 0;
  for (; k < d; ++k) s += a[k] * b[k];
  for (float v : acc) s += v;
  return s;
}

std::vector<int64_t> Leading(const torch::Tensor& t, int64_t trailing) {
  return std::vector<int64_t>(t.sizes().begin(), t.sizes().end() - trailing);
}

// ---- RmsUnit: y = x * r, r = 1 / sqrt(mean(x^2) + eps); dx = r * (g - y * mean(g * y)).
struct RmsUnitOp : torch::autograd::Function<RmsUnitOp> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x_in) {
    const auto x = x_in.contiguous();
    const int64_t d = x.size(-1), rows = x.numel() / d;
    auto y = torch::empty_like(x);
    auto r = torch::empty({rows}, x.options());
    const float* xp = x.data_ptr<float>();
    float *yp = y.data_ptr<float>(), *rp = r.data_ptr<float>();
    at::parallel_for(0, rows, kGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const float* xi = xp + i * d;
        const float ri = 1.0f / std::sqrt(Dot(xi, xi, d) / float(d) + kRmsEps);
        float* yi = yp + i * d;
        for (int64_t k = 0; k < d; ++k) yi[k] = xi[k] * ri;
        rp[i] = ri;
      }
    });
    ctx->save_for_backward({y, r});
    return y;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &y = saved[0], &r = saved[1];
    const auto g = grads[0].contiguous();
    const int64_t d = y.size(-1), rows = y.numel() / d;
    auto dx = torch::empty_like(y);
    const float *yp = y.data_ptr<float>(), *rp = r.data_ptr<float>(), *gp = g.data_ptr<float>();
    float* dp = dx.data_ptr<float>();
    at::parallel_for(0, rows, kGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const float *yi = yp + i * d, *gi = gp + i * d;
        const float mean_gy = Dot(gi, yi, d) / float(d), ri = rp[i];
        float* di = dp + i * d;
        for (int64_t k = 0; k < d; ++k) di[k] = ri * (gi[k] - yi[k] * mean_gy);
      }
    });
    return {dx};
  }
};

// ---- SinkhornExp. The backward recomputes each token's rounds (n*n floats per
// round, on the stack of the loop) instead of keeping 2 * iterations tensors.
struct SinkhornExpOp : torch::autograd::Function<SinkhornExpOp> {
  // Runs the rounds on one token's matrix r [n*n], writing round k's result to hist[k] (hist[0] = input).
  static void Rounds(const float* in, int64_t n, int iterations, float* hist) {
    const int64_t nn = n * n;
    for (int64_t k = 0; k < nn; ++k) hist[k] = in[k];
    for (int step = 0; step < 2 * iterations; ++step) {
      const float* prev = hist + step * nn;
      float* cur = hist + (step + 1) * nn;
      const bool rows = step % 2 == 0;  // rows first, then columns
      for (int64_t a = 0; a < n; ++a) {
        // Element b of vector a: r[a][b] for rows, r[b][a] for columns.
        auto at = [&](int64_t b) { return rows ? a * n + b : b * n + a; };
        float top = prev[at(0)];
        for (int64_t b = 1; b < n; ++b) top = std::max(top, prev[at(b)]);
        float sum = 0;
        for (int64_t b = 0; b < n; ++b) sum += std::exp(prev[at(b)] - top);
        const float lse = top + std::log(sum);
        for (int64_t b = 0; b < n; ++b) cur[at(b)] = prev[at(b)] - lse;
      }
    }
  }

  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& logits_in, int64_t iterations) {
    const auto logits = logits_in.contiguous();
    const int64_t n = logits.size(-1), nn = n * n, tokens = logits.numel() / nn;
    auto out = torch::empty_like(logits);
    const float* lp = logits.data_ptr<float>();
    float* op = out.data_ptr<float>();
    at::parallel_for(0, tokens, kGrain, [&](int64_t begin, int64_t end) {
      std::vector<float> hist(size_t((2 * iterations + 1) * nn));
      for (int64_t t = begin; t < end; ++t) {
        Rounds(lp + t * nn, n, int(iterations), hist.data());
        const float* last = hist.data() + 2 * iterations * nn;
        for (int64_t k = 0; k < nn; ++k) op[t * nn + k] = std::exp(last[k]);
      }
    });
    ctx->save_for_backward({logits});
    ctx->saved_data["iterations"] = iterations;
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto logits = ctx->get_saved_variables()[0];
    const int64_t iterations = ctx->saved_data["iterations"].toInt();
    const auto g = grads[0].contiguous();
    const int64_t n = logits.size(-1), nn = n * n, tokens = logits.numel() / nn;
    auto dlogits = torch::empty_like(logits);
    const float *lp = logits.data_ptr<float>(), *gp = g.data_ptr<float>();
    float* dp = dlogits.data_ptr<float>();
    at::parallel_for(0, tokens, kGrain, [&](int64_t begin, int64_t end) {
      std::vector<float> hist(size_t((2 * iterations + 1) * nn)), dr(static_cast<size_t>(nn));
      for (int64_t t = begin; t < end; ++t) {
        Rounds(lp + t * nn, n, int(iterations), hist.data());
        const float* last = hist.data() + 2 * iterations * nn;
        for (int64_t k = 0; k < nn; ++k) dr[k] = gp[t * nn + k] * std::exp(last[k]);  // d exp
        // y = r - logsumexp(r) along a vector: dr = dy - softmax(r) * sum(dy), softmax(r) = exp(y).
        for (int64_t step = 2 * iterations - 1; step >= 0; --step) {
          const float* y = hist.data() + (step + 1) * nn;
          const bool rows = step % 2 == 0;
          for (int64_t a = 0; a < n; ++a) {
            auto at = [&](int64_t b) { return rows ? a * n + b : b * n + a; };
            float sum = 0;
            for (int64_t b = 0; b < n; ++b) sum += dr[size_t(at(b))];
            for (int64_t b = 0; b < n; ++b) dr[size_t(at(b))] -= std::exp(y[at(b)]) * sum;
          }
        }
        for (int64_t k = 0; k < nn; ++k) dp[t * nn + k] = dr[size_t(k)];
      }
    });
    return {dlogits, torch::Tensor()};
  }
};

// ---- LaneReadout: u = sum_j w_j X_j; dX_j = w_j du, dw_j = <du, X_j>.
struct LaneReadoutOp : torch::autograd::Function<LaneReadoutOp> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& lanes_in, const torch::Tensor& weight_in) {
    const auto lanes = lanes_in.contiguous(), weight = weight_in.contiguous();
    const int64_t n = lanes.size(-2), d = lanes.size(-1), tokens = lanes.numel() / (n * d);
    auto shape = Leading(lanes, 2);
    shape.push_back(d);
    auto out = torch::empty(shape, lanes.options());
    const float *xp = lanes.data_ptr<float>(), *wp = weight.data_ptr<float>();
    float* op = out.data_ptr<float>();
    at::parallel_for(0, tokens, kGrain, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        const float *x = xp + t * n * d, *w = wp + t * n;
        float* u = op + t * d;
        for (int64_t k = 0; k < d; ++k) u[k] = w[0] * x[k];
        for (int64_t j = 1; j < n; ++j)
          for (int64_t k = 0; k < d; ++k) u[k] += w[j] * x[j * d + k];
      }
    });
    ctx->save_for_backward({lanes, weight});
    return out;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &lanes = saved[0], &weight = saved[1];
    const auto g = grads[0].contiguous();
    const int64_t n = lanes.size(-2), d = lanes.size(-1), tokens = lanes.numel() / (n * d);
    auto dlanes = torch::empty_like(lanes), dweight = torch::empty_like(weight);
    const float *xp = lanes.data_ptr<float>(), *wp = weight.data_ptr<float>(), *gp = g.data_ptr<float>();
    float *dxp = dlanes.data_ptr<float>(), *dwp = dweight.data_ptr<float>();
    at::parallel_for(0, tokens, kGrain, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        const float *x = xp + t * n * d, *w = wp + t * n, *du = gp + t * d;
        float *dx = dxp + t * n * d, *dw = dwp + t * n;
        for (int64_t j = 0; j < n; ++j) {
          for (int64_t k = 0; k < d; ++k) dx[j * d + k] = w[j] * du[k];
          dw[j] = Dot(du, x + j * d, d);
        }
      }
    });
    return {dlanes, dweight};
  }
};

// ---- LaneUpdate: out_i = sum_j M_ij X_j + p_i y.
// dX_j = sum_i M_ij G_i, dM_ij = <G_i, X_j>, dp_i = <G_i, y>, dy = sum_i p_i G_i.
struct LaneUpdateOp : torch::autograd::Function<LaneUpdateOp> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& lanes_in, const torch::Tensor& mix_in,
                               const torch::Tensor& post_in, const torch::Tensor& y_in) {
    const auto lanes = lanes_in.contiguous(), mix = mix_in.contiguous(), post = post_in.contiguous(), y = y_in.contiguous();
    const int64_t n = lanes.size(-2), d = lanes.size(-1), tokens = lanes.numel() / (n * d);
    auto out = torch::empty_like(lanes);
    const float *xp = lanes.data_ptr<float>(), *mp = mix.data_ptr<float>(), *pp = post.data_ptr<float>(),
                *yp = y.data_ptr<float>();
    float* op = out.data_ptr<float>();
    at::parallel_for(0, tokens, kGrain, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        const float *x = xp + t * n * d, *m = mp + t * n * n, *p = pp + t * n, *yt = yp + t * d;
        float* o = op + t * n * d;
        for (int64_t i = 0; i < n; ++i) {
          float* oi = o + i * d;
          for (int64_t k = 0; k < d; ++k) oi[k] = p[i] * yt[k];
          for (int64_t j = 0; j < n; ++j)
            for (int64_t k = 0; k < d; ++k) oi[k] += m[i * n + j] * x[j * d + k];
        }
      }
    });
    ctx->save_for_backward({lanes, mix, post, y});
    return out;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &lanes = saved[0], &mix = saved[1], &post = saved[2], &y = saved[3];
    const auto g = grads[0].contiguous();
    const int64_t n = lanes.size(-2), d = lanes.size(-1), tokens = lanes.numel() / (n * d);
    auto dlanes = torch::empty_like(lanes), dmix = torch::empty_like(mix), dpost = torch::empty_like(post),
         dy = torch::empty_like(y);
    const float *xp = lanes.data_ptr<float>(), *mp = mix.data_ptr<float>(), *pp = post.data_ptr<float>(),
                *yp = y.data_ptr<float>(), *gp = g.data_ptr<float>();
    float *dxp = dlanes.data_ptr<float>(), *dmp = dmix.data_ptr<float>(), *dpp = dpost.data_ptr<float>(),
          *dyp = dy.data_ptr<float>();
    at::parallel_for(0, tokens, kGrain, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        const float *x = xp + t * n * d, *m = mp + t * n * n, *p = pp + t * n, *yt = yp + t * d, *gt = gp + t * n * d;
        float *dx = dxp + t * n * d, *dm = dmp + t * n * n, *dp = dpp + t * n, *dyt = dyp + t * d;
        for (int64_t j = 0; j < n; ++j) {
          float* dxj = dx + j * d;
          for (int64_t k = 0; k < d; ++k) dxj[k] = m[j] * gt[k];  // i = 0
          for (int64_t i = 1; i < n; ++i)
            for (int64_t k = 0; k < d; ++k) dxj[k] += m[i * n + j] * gt[i * d + k];
        }
        for (int64_t k = 0; k < d; ++k) dyt[k] = p[0] * gt[k];
        for (int64_t i = 1; i < n; ++i)
          for (int64_t k = 0; k < d; ++k) dyt[k] += p[i] * gt[i * d + k];
        for (int64_t i = 0; i < n; ++i) {
          dp[i] = Dot(gt + i * d, yt, d);
          for (int64_t j = 0; j < n; ++j) dm[i * n + j] = Dot(gt + i * d, x + j * d, d);
        }
      }
    });
    return {dlanes, dmix, dpost, dy};
  }
};

}  // namespace

torch::Tensor ReferenceRmsUnit(const torch::Tensor& x) {
  // x*x rather than pow(2): PowBackward is several times slower than MulBackward on the CPU.
  return x * torch::rsqrt((x * x).mean(-1, true) + kRmsEps);
}

torch::Tensor RmsUnit(const torch::Tensor& x) { return Fusable({&x}) ? RmsUnitOp::apply(x) : ReferenceRmsUnit(x); }

torch::Tensor ReferenceSinkhornExp(const torch::Tensor& logits, int iterations) {
  auto r = logits;
  for (int it = 0; it < iterations; ++it) {
    r = r - torch::logsumexp(r, -1, true);
    r = r - torch::logsumexp(r, -2, true);
  }
  return torch::exp(r);
}

torch::Tensor SinkhornExp(const torch::Tensor& logits, int iterations) {
  return Fusable({&logits}) ? SinkhornExpOp::apply(logits, int64_t(iterations)) : ReferenceSinkhornExp(logits, iterations);
}

torch::Tensor ReferenceLaneReadout(const torch::Tensor& lanes, const torch::Tensor& weight) {
  return (weight.unsqueeze(-1) * lanes).sum(-2);
}

torch::Tensor LaneReadout(const torch::Tensor& lanes, const torch::Tensor& weight) {
  return Fusable({&lanes, &weight}) ? LaneReadoutOp::apply(lanes, weight) : ReferenceLaneReadout(lanes, weight);
}

torch::Tensor ReferenceLaneUpdate(const torch::Tensor& lanes, const torch::Tensor& mix, const torch::Tensor& post,
                                  const torch::Tensor& y) {
  // n broadcast products rather than a batched matmul: ATen's bmm loops over the tokens.
  const int64_t n = mix.size(-1);
  torch::Tensor out = post.unsqueeze(-1) * y.unsqueeze(-2);
  for (int64_t j = 0; j < n; ++j) out = out + mix.select(-1, j).unsqueeze(-1) * lanes.select(-2, j).unsqueeze(-2);
  return out;
}

torch::Tensor LaneUpdate(const torch::Tensor& lanes, const torch::Tensor& mix, const torch::Tensor& post,
                         const torch::Tensor& y) {
  return Fusable({&lanes, &mix, &post, &y}) ? LaneUpdateOp::apply(lanes, mix, post, y)
                                            : ReferenceLaneUpdate(lanes, mix, post, y);
}

}  // namespace needle::train

#include "model/reference_model.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "model/ops.h"
#include "quant/hadamard.h"

namespace needle {

QueryPositions PositionsFor(int64_t q, AttentionSpan span) {
  const int64_t S = span.sinks, W = span.window;
  if (q < S) return {q + 1, q};  // inside the sink block: plain causal over sinks
  if (W == 0) return {S, q};     // no window: absolute positions
  const int64_t first = std::max(S, q - W + 1);
  const int64_t nw = q - first + 1;
  return {first, S + nw - 1};
}

ReferenceWeights ReferenceWeights::FromArchive(const CactArchive& a) {
  ReferenceWeights w;
  w.config = a.config();
  const CactLayout& l = a.layout();
  w.embedding = a.Dequantized(l.embedding);
  for (const LayerTensors& t : l.layers) {
    Layer y;
    y.norm_in = a.Floats(t.norm_in);
    y.q_proj = a.Dequantized(t.q_proj);
    y.k_proj = a.Dequantized(t.k_proj);
    y.v_proj = a.Dequantized(t.v_proj);
    y.q_norm = a.Floats(t.q_norm);
    y.k_norm = a.Floats(t.k_norm);
    y.gate_proj = a.Dequantized(t.gate_proj);
    y.out_proj = a.Dequantized(t.out_proj);
    y.post_norm = a.Floats(t.post_norm);
    y.attn_gate = a.Floats(t.attn_gate)[0];
    y.pre_hada = a.Floats(t.pre_hada);
    y.d1 = a.Floats(t.d1);
    y.d2 = a.Floats(t.d2);
    y.d3 = a.Floats(t.d3);
    w.layers.push_back(std::move(y));
  }
  w.a_pre = a.Floats(l.mhc_a_pre);
  w.a_post = a.Floats(l.mhc_a_post);
  w.a_res = a.Floats(l.mhc_a_res);
  w.b_pre = a.Floats(l.mhc_b_pre);
  w.b_post = a.Floats(l.mhc_b_post);
  w.b_res = a.Floats(l.mhc_b_res);
  w.phi_pre = a.Dequantized(l.mhc_phi_pre);
  w.phi_post = a.Dequantized(l.mhc_phi_post);
  w.phi_res = a.Dequantized(l.mhc_phi_res);
  for (size_t s = 0; s < l.engram.size(); ++s) {
    EngramSite e;
    e.layer = w.config.engram_layers[s];
    e.tables = a.Dequantized(l.engram[s].tables);
    e.key_proj = a.Dequantized(l.engram[s].key_proj);
    e.value_proj = a.Dequantized(l.engram[s].value_proj);
    e.taps = a.Floats(l.engram[s].taps);
    w.sites.push_back(std::move(e));
  }
  w.final_norm = a.Floats(l.final_norm);
  return w;
}

ReferenceModel::ReferenceModel(const CactArchive& archive) : ReferenceModel(ReferenceWeights::FromArchive(archive)) {}

ReferenceModel::ReferenceModel(ReferenceWeights weights) : w_(std::move(weights)) {
  const uint32_t hd = w_.config.head_dim();
  for (uint32_t i = 0; i < hd / 2; ++i) {
    inv_freq_.push_back(std::pow(double(w_.config.rope_theta), -2.0 * i / hd));
  }
}

ReferenceState ReferenceModel::NewState(AttentionSpan span) const {
  ReferenceState s;
  s.span = span;
  s.k.resize(w_.config.num_layers);
  s.v.resize(w_.config.num_layers);
  s.ev0.resize(w_.sites.size());
  return s;
}

std::vector<uint32_t> ReferenceModel::EngramIndices(std::span<const int32_t> tokens, int64_t p) const {
  const ModelConfig& c = w_.config;
  const uint32_t eh = c.engram_heads_per_order();
  std::vector<uint32_t> idx;
  for (uint32_t oi = 0; oi < c.engram_orders.size(); ++oi) {
    for (uint32_t h = 0; h < eh; ++h) {
      idx.push_back(EngramIndex(oi * eh + h, c.engram_orders[oi], tokens.data(), p, c.engram_slots));
    }
  }
  return idx;
}

std::vector<float> ReferenceModel::Forward(ReferenceState& st, std::span<const int32_t> tokens) const {
  const ModelConfig& c = w_.config;
  const size_t d = c.d_model, n = c.mhc_lanes, L = c.num_layers, H = c.num_heads, G = c.num_kv_heads;
  const size_t hd = c.head_dim(), V = c.vocab_size, m = c.hada_n(), kv = G * hd, group = H / G;
  const size_t T = tokens.size();
  const int64_t T0 = static_cast<int64_t>(st.tokens.size());
  for (int32_t t : tokens) {
    if (t < 0 || static_cast<uint32_t>(t) >= V) throw Error(ErrorCode::kInvalidArgument, "token id " + std::to_string(t) + " outside the vocabulary");
  }
  st.tokens.insert(st.tokens.end(), tokens.begin(), tokens.end());

  // Residual lanes X[p][lane][d], all initialised to x0 = E[token] * sqrt(d).
  std::vector<float> X(T * n * d);
  const float emb_scale = std::sqrt(static_cast<float>(d));
  for (size_t p = 0; p < T; ++p) {
    const float* e = &w_.embedding[size_t(tokens[p]) * d];
    for (size_t j = 0; j < n; ++j) {
      for (size_t i = 0; i < d; ++i) X[(p * n + j) * d + i] = e[i] * emb_scale;
    }
  }

  // RoPE angles for every position this call can use.
  int64_t max_pos = 0;
  for (size_t p = 0; p < T; ++p) max_pos = std::max(max_pos, PositionsFor(T0 + int64_t(p), st.span).query_position);
  std::vector<float> rope_cos((max_pos + 1) * (hd / 2)), rope_sin(rope_cos.size());
  for (int64_t pos = 0; pos <= max_pos; ++pos) {
    for (size_t i = 0; i < hd / 2; ++i) {
      const double angle = double(pos) * inv_freq_[i];
      rope_cos[pos * (hd / 2) + i] = static_cast<float>(std::cos(angle));
      rope_sin[pos * (hd / 2) + i] = static_cast<float>(std::sin(angle));
    }
  }
  auto rope = [&](float* x, int64_t pos) {
    const float* cs = &rope_cos[pos * (hd / 2)];
    const float* sn = &rope_sin[pos * (hd / 2)];
    for (size_t i = 0; i < hd / 2; ++i) {
      const float x1 = x[i], x2 = x[i + hd / 2];
      x[i] = x1 * cs[i] - x2 * sn[i];
      x[i + hd / 2] = x2 * cs[i] + x1 * sn[i];
    }
  };

  std::vector<float> nx(n * d), proj(n * n), hpre(T * n), hpost(T * n), hres(T * n * n), u(T * d), xin(T * d);
  std::vector<float> h(d), q(T * H * hd), gate(H * hd), o(H * hd), a(d), x1(d), h2(d), z(m), scores, krot(hd), qrot(hd);
  std::vector<float> e(d), ek(T * d), ev(d), ru(d), rek(d), y(d), newX(n * d);

  for (size_t li = 0; li < L; ++li) {
    const ReferenceWeights::Layer& W = w_.layers[li];
    const size_t lane = li % n;
    // mHC: lane mixing coefficients from the normalised flattened lanes.
    for (size_t p = 0; p < T; ++p) {
      RmsUnit(&X[p * n * d], n * d, nx.data());
      MatVec(&w_.phi_pre[li * n * n * d], nx.data(), n, n * d, proj.data());
      for (size_t j = 0; j < n; ++j) {
        const float off = j == lane ? 4.0f : -4.0f;  // 8*lane_i - 4
        hpre[p * n + j] = Sigmoid(w_.a_pre[li] * proj[j] + w_.b_pre[li * n + j] + off);
      }
      MatVec(&w_.phi_post[li * n * n * d], nx.data(), n, n * d, proj.data());
      for (size_t j = 0; j < n; ++j) {
        const float off = j == lane ? 0.0f : -4.0f;  // -4*(1 - lane_i)
        hpost[p * n + j] = 2.0f * Sigmoid(w_.a_post[li] * proj[j] + w_.b_post[li * n + j] + off);
      }
      float* hr = &hres[p * n * n];
      MatVec(&w_.phi_res[li * n * n * n * d], nx.data(), n * n, n * d, hr);
      for (size_t k = 0; k < n * n; ++k) hr[k] = w_.a_res[li] * hr[k] + w_.b_res[li * n * n + k];
      SinkhornInPlace(hr, n);
      for (size_t i = 0; i < d; ++i) {
        float acc = 0.0f;
        for (size_t j = 0; j < n; ++j) acc += hpre[p * n + j] * X[(p * n + j) * d + i];
        u[p * d + i] = acc;
      }
    }
    std::copy(u.begin(), u.end(), xin.begin());

    // Engram injection at a site: x = u + alpha * ev.
    for (size_t s = 0; s < w_.sites.size(); ++s) {
      const ReferenceWeights::EngramSite& E = w_.sites[s];
      if (E.layer != li) continue;
      const uint32_t eh = c.engram_heads_per_order(), sub = c.engram_sub_dim(), slots = c.engram_slots;
      std::vector<float>& ev0 = st.ev0[s];
      for (size_t p = 0; p < T; ++p) {
        const int64_t P = T0 + int64_t(p);
        for (uint32_t oi = 0; oi < c.engram_orders.size(); ++oi) {
          const uint32_t order = c.engram_orders[oi];
          const bool ok = P - int64_t(order) + 1 >= 0;  // the n-gram is complete
          for (uint32_t hh = 0; hh < eh; ++hh) {
            const uint32_t t = oi * eh + hh;
            const uint32_t idx = EngramIndex(t, order, st.tokens.data(), P, slots);
            const float* row = &E.tables[(size_t(t) * slots + idx) * sub];
            for (uint32_t k = 0; k < sub; ++k) e[t * sub + k] = ok ? row[k] : 0.0f;
          }
        }
        MatVec(E.key_proj.data(), e.data(), d, d, &ek[p * d]);
        ev0.resize(size_t(P + 1) * d);
        MatVec(E.value_proj.data(), e.data(), d, d, &ev0[P * d]);
      }
      const uint32_t taps = static_cast<uint32_t>(E.taps.size() / d), dil = c.engram_dilation();
      for (size_t p = 0; p < T; ++p) {
        const int64_t P = T0 + int64_t(p);
        std::fill(ev.begin(), ev.end(), 0.0f);
        for (uint32_t j = 0; j < taps; ++j) {
          const int64_t src = P - int64_t(j) * dil;
          if (src < 0) continue;
          for (size_t i = 0; i < d; ++i) ev[i] += E.taps[j * d + i] * ev0[src * d + i];
        }
        RmsUnit(&u[p * d], d, ru.data());
        RmsUnit(&ek[p * d], d, rek.data());
        float dot = 0.0f;
        for (size_t i = 0; i < d; ++i) dot += ru[i] * rek[i];
        const float alpha = Sigmoid(dot / std::sqrt(static_cast<float>(d)));
        for (size_t i = 0; i < d; ++i) xin[p * d + i] = u[p * d + i] + alpha * ev[i];
      }
    }

    // Attention inputs: q for the chunk, k/v appended to the state.
    std::vector<float>& K = st.k[li];
    std::vector<float>& Vs = st.v[li];
    K.resize(size_t(T0 + T) * kv);
    Vs.resize(size_t(T0 + T) * kv);
    for (size_t p = 0; p < T; ++p) {
      const int64_t P = T0 + int64_t(p);
      ZcRmsNorm(&xin[p * d], W.norm_in.data(), d, h.data());
      MatVec(W.q_proj.data(), h.data(), H * hd, d, &q[p * H * hd]);
      MatVec(W.k_proj.data(), h.data(), kv, d, &K[P * kv]);
      MatVec(W.v_proj.data(), h.data(), kv, d, &Vs[P * kv]);
      for (size_t hh = 0; hh < H; ++hh) ZcRmsNorm(&q[(p * H + hh) * hd], W.q_norm.data(), hd, &q[(p * H + hh) * hd]);
      for (size_t g = 0; g < G; ++g) ZcRmsNorm(&K[P * kv + g * hd], W.k_norm.data(), hd, &K[P * kv + g * hd]);
    }

    for (size_t p = 0; p < T; ++p) {
      const int64_t P = T0 + int64_t(p);
      const QueryPositions pos = PositionsFor(P, st.span);
      const int64_t S = st.span.sinks;
      // Visible keys: sinks [0, min(S, P+1)) at their own positions, window [first, P].
      std::vector<std::pair<int64_t, int64_t>> keys;  // (index, rope position)
      for (int64_t k = 0; k < std::min<int64_t>(S, P + 1); ++k) keys.emplace_back(k, k);
      for (int64_t k = std::max<int64_t>(pos.first_window_key, std::min<int64_t>(S, P + 1)); k <= P; ++k) {
        keys.emplace_back(k, pos.query_position - (P - k));
      }
      scores.resize(keys.size());
      ZcRmsNorm(&xin[p * d], W.norm_in.data(), d, h.data());
      for (size_t hh = 0; hh < H; ++hh) {
        const size_t g = hh / group;
        std::copy_n(&q[(p * H + hh) * hd], hd, qrot.begin());
        rope(qrot.data(), pos.query_position);
        float mx = -INFINITY;
        for (size_t j = 0; j < keys.size(); ++j) {
          std::copy_n(&K[keys[j].first * kv + g * hd], hd, krot.begin());
          rope(krot.data(), keys[j].second);
          float sdot = 0.0f;
          for (size_t i = 0; i < hd; ++i) sdot += qrot[i] * krot[i];
          scores[j] = sdot / std::sqrt(static_cast<float>(hd));
          mx = std::max(mx, scores[j]);
        }
        float sum = 0.0f;
        for (float& sc : scores) sum += (sc = std::exp(sc - mx));
        float* oh = &o[hh * hd];
        std::fill(oh, oh + hd, 0.0f);
        for (size_t j = 0; j < keys.size(); ++j) {
          const float pj = scores[j] / sum;
          const float* vv = &Vs[keys[j].first * kv + g * hd];
          for (size_t i = 0; i < hd; ++i) oh[i] += pj * vv[i];
        }
      }
      MatVec(W.gate_proj.data(), h.data(), H * hd, d, gate.data());
      for (size_t i = 0; i < H * hd; ++i) o[i] *= Sigmoid(gate[i]);
      MatVec(W.out_proj.data(), o.data(), d, H * hd, a.data());
      ZcRmsNorm(a.data(), W.post_norm.data(), d, a.data());
      const float g_attn = Sigmoid(W.attn_gate);
      for (size_t i = 0; i < d; ++i) x1[i] = xin[p * d + i] + g_attn * a[i];
      // Hadamard MLP: z = W_m(d1 ⊙ x); z = W_m(silu(d2 ⊙ z)); out = (d3 ⊙ z)[:d].
      ZcRmsNorm(x1.data(), W.pre_hada.data(), d, h2.data());
      std::fill(z.begin(), z.end(), 0.0f);
      for (size_t i = 0; i < d; ++i) z[i] = W.d1[i] * h2[i];
      FastWalshHadamard(z.data(), m);
      for (size_t i = 0; i < m; ++i) z[i] = Silu(W.d2[i] * z[i]);
      FastWalshHadamard(z.data(), m);
      // y = Block(x) - u; X' = hres · X + hpost ⊗ y.
      for (size_t i = 0; i < d; ++i) y[i] = x1[i] + W.d3[i] * z[i] - u[p * d + i];
      const float* hr = &hres[p * n * n];
      for (size_t r = 0; r < n; ++r) {
        for (size_t i = 0; i < d; ++i) {
          float acc = hpost[p * n + r] * y[i];
          for (size_t cc = 0; cc < n; ++cc) acc += hr[r * n + cc] * X[(p * n + cc) * d + i];
          newX[r * d + i] = acc;
        }
      }
      std::copy(newX.begin(), newX.end(), X.begin() + p * n * d);
    }
  }

  // Final norm over the lane mean, tied logits.
  std::vector<float> logits(T * V), mean(d), hf(d);
  for (size_t p = 0; p < T; ++p) {
    std::fill(mean.begin(), mean.end(), 0.0f);
    for (size_t j = 0; j < n; ++j) {
      for (size_t i = 0; i < d; ++i) mean[i] += X[(p * n + j) * d + i] / static_cast<float>(n);
    }
    ZcRmsNorm(mean.data(), w_.final_norm.data(), d, hf.data());
    MatVec(w_.embedding.data(), hf.data(), V, d, &logits[p * V]);
  }
  return logits;
}

}  // namespace needle

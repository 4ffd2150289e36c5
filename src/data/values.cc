#include "data/values.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "base/error.h"  // Error

namespace needle::data {

namespace {

std::string Fmt2(int x) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%02d", x);
  return buf;
}

std::string WithCommas(long long n) {
  std::string s = std::to_string(n < 0 ? -n : n), out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i && (s.size() - i) % 3 == 0) out += ',';
    out += s[i];
  }
  return (n < 0 ? "-" : "") + out;
}

// Digits for a number with `decimals` places (trailing zeros kept: "12.50").
std::string FormatFixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  for (size_t i = 0; (i = s.find(from, i)) != std::string::npos; i += to.size()) s.replace(i, from.size(), to);
  return s;
}

bool Contains(const std::string& s, const std::string& p) { return s.find(p) != std::string::npos; }

// Number words are used for small or round values only (as people say them).
bool Sayable(long long n) { return n >= 0 && (n <= 100 || (n < 1000000 && n % 100 == 0)); }

std::string NumberSurface(const SlotDef& s, double v, Rng& rng) {
  std::vector<std::string> forms = s.forms;
  const bool integral = std::floor(v) == v;
  const long long n = static_cast<long long>(std::llround(v));
  // Drop word forms for values people would not spell out.
  if (!integral || !Sayable(n)) {
    std::vector<std::string> keep;
    for (const auto& f : forms)
      if (!Contains(f, "{w}")) keep.push_back(f);
    if (!keep.empty()) forms = keep;
  }
  std::string form = rng.Pick(forms);
  std::string digits;
  if (s.kind == SlotKind::kNumber && s.decimals > 0 && (!integral || rng.Chance(0.1))) {
    digits = FormatFixed(v, s.decimals);
  } else if (integral) {
    digits = (std::llabs(n) >= 10000 && rng.Chance(0.4)) ? WithCommas(n) : std::to_string(n);
  } else {
    digits = FormatFixed(v, s.decimals);
  }
  if (Contains(form, "{w}")) {
    if (!integral || !Sayable(n)) form = Replace(form, "{w}", "{n}");
    else form = Replace(form, "{w}", NumberWords(n, rng.Chance(0.6)));
  }
  return Replace(form, "{n}", digits);
}

// ---- clock times --------------------------------------------------------------------

std::string TimeSurface(int h, int m, Rng& rng) {
  const int h12 = h % 12 == 0 ? 12 : h % 12;
  const bool pm = h >= 12;
  if (h == 12 && m == 0 && rng.Chance(0.4)) return rng.Chance(0.7) ? "noon" : "midday";
  if (h == 0 && m == 0 && rng.Chance(0.6)) return "midnight";
  const std::string mm = Fmt2(m);
  static const char* const kAm[] = {"am", "am", "AM", "a.m."};
  static const char* const kPm[] = {"pm", "pm", "PM", "p.m."};
  const size_t style = rng.Below(4);
  const std::string ampm = pm ? kPm[style] : kAm[style];
  const std::string sp = rng.Chance(0.5) ? " " : "";
  const size_t r = rng.Below(100);
  if (r < 45) return (m == 0 ? std::to_string(h12) : std::to_string(h12) + ":" + mm) + sp + ampm;
  if (r < 70) return (h < 10 && rng.Chance(0.5) ? "0" : "") + std::to_string(h) + ":" + mm;  // 24-hour
  if (m == 0) {
    if (h >= 5 && h <= 11) return std::to_string(h12) + (rng.Chance(0.5) ? " in the morning" : "");
    if (h >= 13 && h <= 17) return std::to_string(h12) + " in the afternoon";
    if (h >= 18 && h <= 21) return std::to_string(h12) + " in the evening";
    if (h >= 20 && h <= 23) return std::to_string(h12) + " at night";
  }
  if (m == 30 || m == 15 || m == 45) {
    const int hh = m == 45 ? (h + 1) % 24 : h;
    const int hh12 = hh % 12 == 0 ? 12 : hh % 12;
    const std::string word = rng.Chance(0.5) ? NumberWords(hh12) : std::to_string(hh12);
    const std::string lead = m == 30 ? "half past " : m == 15 ? "quarter past " : "quarter to ";
    // The day part must be stated unless it is a morning time.
    if (hh >= 5 && hh <= 11) return lead + word + (rng.Chance(0.5) ? " in the morning" : "");
    if (hh >= 13 && hh <= 17) return lead + word + " in the afternoon";
    if (hh >= 18 && hh <= 23) return lead + word + (rng.Chance(0.5) ? " in the evening" : " pm");
  }
  return (m == 0 ? std::to_string(h12) : std::to_string(h12) + ":" + mm) + sp + ampm;
}

void DrawClock(int& h, int& m, Rng& rng) {
  h = static_cast<int>(rng.Range(0, 23));
  if (rng.Chance(0.6)) h = static_cast<int>(rng.Range(6, 22));
  const size_t r = rng.Below(100);
  m = r < 45 ? 0 : r < 65 ? 30 : r < 80 ? (rng.Chance(0.5) ? 15 : 45) : static_cast<int>(rng.Range(0, 11)) * 5;
  if (rng.Chance(0.05)) m = static_cast<int>(rng.Range(0, 59));
}

// ---- dates ------------------------------------------------------------------------------

std::string AbsoluteDateSurface(Date d, bool with_year, Rng& rng) {
  const std::string month = kMonthNames[d.m - 1], mon = kMonthAbbrev[d.m - 1];
  const std::string day = rng.Chance(0.3) ? Ordinal(d.d) : std::to_string(d.d);
  const std::string y = std::to_string(d.y);
  if (with_year) {
    switch (rng.Below(4)) {
      case 0: return month + " " + day + ", " + y;
      case 1: return std::to_string(d.d) + " " + month + " " + y;
      case 2: return mon + " " + std::to_string(d.d) + " " + y;
      default: return IsoDate(d);
    }
  }
  switch (rng.Below(5)) {
    case 0:
    case 1: return month + " " + day;
    case 2: return mon + " " + std::to_string(d.d);
    case 3: return std::to_string(d.d) + " " + month;
    default: return "the " + Ordinal(d.d) + " of " + month;
  }
}

// Surface and value of a date; `lead` gets "on " where English needs it.
void DrawDate(const ValueContext& ctx, Rep rep, bool absolute, Rng& rng, SlotValue& v, std::string& lead) {
  const bool resolve = rep == Rep::kDate || rep == Rep::kDateTime;
  const bool relative_ok = !absolute && (!resolve || ctx.today.has_value());
  const Date base = ctx.today.value_or(Date{static_cast<int>(rng.Range(2024, 2027)), static_cast<int>(rng.Range(1, 12)),
                                            static_cast<int>(rng.Range(1, 28))});
  const size_t r = rng.Below(100);
  if (relative_ok && r < (ctx.today ? 55u : 35u)) {
    v.date_how = "relative";
    const size_t k = rng.Below(100);
    if (k < 12) {
      v.surface = "today", v.date = base;
    } else if (k < 40) {
      v.surface = "tomorrow", v.date = AddDays(base, 1);
    } else if (k < 48) {
      v.surface = "the day after tomorrow", v.date = AddDays(base, 2);
    } else if (k < 80) {
      int ahead = static_cast<int>(rng.Range(1, 6));  // never today's weekday: "on Friday" on a Friday is ambiguous
      v.date = AddDays(base, ahead);
      const std::string wd = kWeekdayNames[Weekday(v.date)];
      const size_t f = rng.Below(3);
      if (f == 0) v.surface = wd, lead = "on ";
      else if (f == 1) v.surface = "this " + wd;
      else v.surface = wd, lead = rng.Chance(0.5) ? "on " : "";
    } else if (k < 94) {
      const int n = static_cast<int>(rng.Range(2, 10));
      v.surface = "in " + (rng.Chance(0.5) ? NumberWords(n) : std::to_string(n)) + " days";
      v.date = AddDays(base, n);
    } else {
      v.surface = "in a week", v.date = AddDays(base, 7);
    }
    return;
  }
  // Absolute: without a date fact a date-typed parameter needs the year in the request.
  const bool with_year = (resolve && !ctx.today) || absolute || rng.Chance(0.2);
  Date d;
  if (ctx.today) {
    d = AddDays(*ctx.today, rng.Range(1, 300));
  } else {
    d = Date{static_cast<int>(rng.Range(2024, 2027)), static_cast<int>(rng.Range(1, 12)), 1};
    d.d = static_cast<int>(rng.Range(1, DaysInMonth(d.y, d.m)));
  }
  // Without a year the date is the first such day after the date fact (d is within 300 days of it).
  v.date = d;
  v.date_how = with_year ? "absolute" : "monthday";
  v.surface = AbsoluteDateSurface(d, with_year, rng);
  if (StartsWith(v.surface, "the ")) lead = "on ";
  else lead = rng.Chance(0.6) ? "on " : "";
}

// ---- durations ------------------------------------------------------------------------------

struct DurationForm {
  long long seconds;
  std::string surface;
};

DurationForm DrawDuration(Rep rep, const ParamBinding* b, const SlotDef& s, Rng& rng) {
  const double lo_s = s.has_range ? s.min : 1, hi_s = s.has_range ? s.max : 86400;
  for (int attempt = 0; attempt < 64; ++attempt) {
    DurationForm f;
    const size_t r = rng.Below(100);
    if (r < 18) {
      const long long n = rng.Chance(0.5) ? rng.Range(1, 12) * 5 : rng.Range(2, 300);
      f.seconds = n;
      const char* unit = rng.Chance(0.7) ? " seconds" : rng.Chance(0.5) ? " secs" : " sec";
      f.surface = (n <= 60 && rng.Chance(0.3) ? NumberWords(n) : std::to_string(n)) + unit;
    } else if (r < 68) {
      const long long n = rng.Chance(0.6) ? rng.Range(1, 12) * 5 : rng.Range(1, 180);
      f.seconds = n * 60;
      const char* unit = n == 1 ? " minute" : rng.Chance(0.7) ? " minutes" : rng.Chance(0.5) ? " mins" : " min";
      f.surface = (n <= 60 && rng.Chance(0.3) ? NumberWords(n) : std::to_string(n)) + unit;
      if (n == 1 && rng.Chance(0.5)) f.surface = "a minute";
    } else if (r < 84) {
      const long long n = rng.Range(1, 12);
      f.seconds = n * 3600;
      f.surface = (rng.Chance(0.3) ? NumberWords(n) : std::to_string(n)) + (n == 1 ? " hour" : " hours");
      if (n == 1 && rng.Chance(0.5)) f.surface = "an hour";
    } else if (r < 92) {
      const long long h = rng.Range(1, 4), m = rng.Range(1, 11) * 5;
      f.seconds = h * 3600 + m * 60;
      f.surface = std::to_string(h) + (h == 1 ? " hour" : " hours") + (rng.Chance(0.5) ? " and " : " ") +
                  std::to_string(m) + " minutes";
    } else if (r < 96) {
      f.seconds = 1800, f.surface = "half an hour";
    } else {
      f.seconds = 5400, f.surface = "an hour and a half";
    }
    if (f.seconds < lo_s || f.seconds > hi_s) continue;
    double declared = static_cast<double>(f.seconds);
    if (rep == Rep::kMinutes) {
      if (f.seconds % 60) continue;
      declared = f.seconds / 60.0;
    } else if (rep == Rep::kHours) {
      if (f.seconds % 1800) continue;
      declared = f.seconds / 3600.0;
    }
    if (b && b->has_min && declared < b->min) continue;
    if (b && b->has_max && declared > b->max) continue;
    return f;
  }
  return {rep == Rep::kHours ? 3600 : 600, rep == Rep::kHours ? "1 hour" : "10 minutes"};
}

DurationForm DrawDistance(Rep rep, const ParamBinding* b, const SlotDef& s, Rng& rng) {
  const double lo = s.has_range ? s.min : 1, hi = s.has_range ? s.max : 5000;
  for (int attempt = 0; attempt < 64; ++attempt) {
    DurationForm f;  // seconds = centimetres here
    if (rng.Chance(0.6)) {
      const bool half = rng.Chance(0.2);
      const long long m = rng.Range(1, 20);
      f.seconds = m * 100 + (half ? 50 : 0);
      const std::string num = half ? std::to_string(m) + ".5" : (m <= 20 && rng.Chance(0.25) ? NumberWords(m) : std::to_string(m));
      const char* unit = m == 1 && !half ? (rng.Chance(0.5) ? " meter" : " metre")
                                         : rng.Chance(0.5) ? " meters" : rng.Chance(0.5) ? " metres" : " m";
      f.surface = num + unit;
    } else {
      const long long cm = rng.Chance(0.6) ? rng.Range(1, 19) * 5 : rng.Range(2, 150);
      f.seconds = cm;
      f.surface = std::to_string(cm) + (rng.Chance(0.6) ? " cm" : " centimeters");
    }
    if (f.seconds < lo || f.seconds > hi) continue;
    const double declared = rep == Rep::kMeters ? f.seconds / 100.0 : static_cast<double>(f.seconds);
    if (b && b->has_min && declared < b->min) continue;
    if (b && b->has_max && declared > b->max) continue;
    return f;
  }
  return {100, "1 meter"};
}

}  // namespace

std::string Time24(int hour, int minute) { return Fmt2(hour) + ":" + Fmt2(minute); }

std::string ShortSpan(const std::string& s) {
  std::string one = Replace(s, "\n", " ");
  if (one.size() <= 48) return one;
  const std::vector<std::string> w = SplitWords(one);
  std::string out;
  for (size_t i = 0; i < w.size() && i < 6; ++i) out += (i ? " " : "") + w[i];
  return out + "...";
}

std::string InventedWord(Rng& rng, int min_syllables, int max_syllables) {
  static const char* const kOnset[] = {"b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z",
                                       "br", "dr", "kl", "tr", "st", "sh", "ch", "gr", "pl", "th", "j", "h", "w"};
  static const char* const kVowel[] = {"a", "e", "i", "o", "u", "a", "e", "o", "ai", "ou", "ia", "y"};
  static const char* const kCoda[] = {"", "", "", "n", "r", "l", "k", "s", "m", "x", "nd", "rt"};
  const int n = static_cast<int>(rng.Range(min_syllables, max_syllables));
  std::string w;
  for (int i = 0; i < n; ++i) {
    w += kOnset[rng.Below(std::size(kOnset))];
    w += kVowel[rng.Below(std::size(kVowel))];
    if (i == n - 1 || rng.Chance(0.25)) w += kCoda[rng.Below(std::size(kCoda))];
  }
  return w;
}

std::string ExpandText(const Catalogue& cat, const std::string& text, Split split, Rng& rng, int depth) {
  if (depth > 8) throw Error(ErrorCode::kInvalidArgument, "pool placeholders nest too deep in \"" + text + "\"");
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '{') {
      out += text[i];
      continue;
    }
    const size_t end = text.find('}', i);
    if (end == std::string::npos) throw Error(ErrorCode::kInvalidArgument, "unclosed '{' in pool item \"" + text + "\"");
    std::string body = text.substr(i + 1, end - i - 1), filter;
    i = end;
    if (const size_t bar = body.find('|'); bar != std::string::npos) filter = body.substr(bar + 1), body = body.substr(0, bar);
    std::string v;
    auto arg = [&](int k) -> long long {
      size_t p = 0;
      for (int j = 0; j < k; ++j) p = body.find(':', p) + 1;
      return std::atoll(body.c_str() + p);
    };
    if (body == "word") {
      v = InventedWord(rng);
    } else if (body == "Word") {
      v = CapitalizeFirst(InventedWord(rng));
    } else if (body == "letter") {
      v = std::string(1, static_cast<char>('A' + rng.Below(26)));
    } else if (body == "code") {
      std::string letters;
      const int nl = static_cast<int>(rng.Range(2, 3));
      for (int j = 0; j < nl; ++j) letters += static_cast<char>('A' + rng.Below(26));
      v = letters + (rng.Chance(0.7) ? "-" : "") + std::to_string(rng.Range(100, 999999));
    } else if (StartsWith(body, "digits:")) {
      const long long n = arg(1);
      v = std::to_string(rng.Range(1, 9));
      for (long long j = 1; j < n; ++j) v += static_cast<char>('0' + rng.Below(10));
    } else if (StartsWith(body, "int:")) {
      v = std::to_string(rng.Range(arg(1), arg(2)));
    } else if (StartsWith(body, "hex:")) {
      static const char* const kHex = "0123456789abcdef";
      for (long long j = 0; j < arg(1); ++j) v += kHex[rng.Below(16)];
    } else if (cat.pools.count(body)) {
      v = ExpandPool(cat, body, split, rng);
    } else {
      throw Error(ErrorCode::kInvalidArgument, "unknown placeholder {" + body + "} in \"" + text + "\"");
    }
    (void)depth;
    if (filter == "lower") v = Lower(v);
    else if (filter == "upper") v = Upper(v);
    else if (filter == "cap") v = CapitalizeFirst(v);
    else if (filter == "slug") {
      std::string s;
      for (char c : Lower(v)) s += (c == ' ' || c == '\'') ? (c == ' ' ? '.' : '\0') : c;
      s.erase(std::remove(s.begin(), s.end(), '\0'), s.end());
      v = s;
    } else if (!filter.empty()) {
      throw Error(ErrorCode::kInvalidArgument, "unknown filter |" + filter + " in \"" + text + "\"");
    }
    out += v;
  }
  return out;
}

std::string ExpandPool(const Catalogue& cat, const std::string& name, Split split, Rng& rng) {
  auto it = cat.pools.find(name);
  if (it == cat.pools.end()) throw Error(ErrorCode::kInvalidArgument, "unknown pool '" + name + "'");
  const Pool& p = it->second;
  // Rejection sampling over the split's items (train: train only; val/test: own + train).
  for (int attempt = 0; attempt < 64; ++attempt) {
    const size_t i = rng.Below(p.items.size());
    if (!SplitAllows(split, p.split[i])) continue;
    const std::string& item = p.items[i];
    return item.find('{') == std::string::npos ? item : ExpandText(cat, item, split, rng, 1);
  }
  return p.items[0].find('{') == std::string::npos ? p.items[0] : ExpandText(cat, p.items[0], split, rng, 1);
}

// A value with the example's shape: each letter a random letter of the same
// case, each digit a random digit, the rest kept ("AAPL" -> "QRTZ", "SKU-1234"
// -> "KXB-8071"); a word of capitals may be a letter shorter or longer. The
// example itself one time in ten.
std::string ShapedLike(const std::string& example, Rng& rng) {
  if (rng.Chance(0.1)) return example;
  bool capitals = !example.empty();
  for (char c : example) capitals = capitals && std::isupper(static_cast<unsigned char>(c));
  size_t n = example.size();
  if (capitals && rng.Chance(0.4)) n = rng.Chance(0.5) ? n + 1 : std::max<size_t>(1, n - 1);
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    const char c = example[std::min(i, example.size() - 1)];
    if (std::isupper(static_cast<unsigned char>(c))) out += static_cast<char>('A' + rng.Below(26));
    else if (std::islower(static_cast<unsigned char>(c))) out += static_cast<char>('a' + rng.Below(26));
    else if (std::isdigit(static_cast<unsigned char>(c))) out += static_cast<char>('0' + rng.Below(10));
    else out += c;
  }
  return out;
}

SlotValue AssignedValue(const SlotDef& slot, const std::string& value, const std::string& cue) {
  SlotValue v;
  v.slot = slot.id;
  v.assigned = true;
  v.cue = cue;
  if (slot.kind == SlotKind::kEnum) v.enum_id = value;
  else v.bound = value;
  return v;
}

std::optional<SlotValue> DrawUndeclaredEnum(const SlotDef& slot, const ParamBinding& b, Rng& rng) {
  std::vector<const EnumValue*> out;
  for (const auto& v : slot.values)
    if (!b.enum_map.count(v.id)) out.push_back(&v);
  if (out.empty()) return std::nullopt;
  const EnumValue* e = out[rng.Below(out.size())];
  SlotValue v;
  v.slot = slot.id;
  v.enum_id = e->id;
  v.surface = rng.Pick(e->surfaces);
  return v;
}

SlotValue DrawValue(const SlotDef& s, const ParamBinding* b, const ValueContext& ctx, Rng& rng) {
  SlotValue v;
  v.slot = s.id;
  const Rep rep = b ? b->rep : Rep::kCopy;
  switch (s.kind) {
    case SlotKind::kText:
    case SlotKind::kRef:
      v.surface = s.shape.empty() ? ExpandPool(*ctx.cat, s.pool, ctx.split, rng) : ShapedLike(s.shape, rng);
      break;
    case SlotKind::kList: {
      const int n = static_cast<int>(rng.Range(s.list_min, s.list_max));
      for (int i = 0, tries = 0; i < n && tries < 50; ++tries) {
        std::string item = ExpandPool(*ctx.cat, s.pool, ctx.split, rng);
        if (std::find(v.items.begin(), v.items.end(), item) != v.items.end()) continue;
        v.items.push_back(item), ++i;
      }
      const size_t style = rng.Below(3);
      for (size_t i = 0; i < v.items.size(); ++i) {
        if (i == 0) v.surface = v.items[0];
        else if (i + 1 == v.items.size() && style != 2) v.surface += (style == 0 ? " and " : ", and ") + v.items[i];
        else v.surface += ", " + v.items[i];
      }
      break;
    }
    case SlotKind::kInt:
    case SlotKind::kNumber: {
      double lo = s.min, hi = s.max;
      if (b && b->has_min) lo = std::max(lo, b->min);
      if (b && b->has_max) hi = std::min(hi, b->max);
      if (lo > hi) lo = hi = b && b->has_min ? b->min : s.min;
      const double scale = s.kind == SlotKind::kNumber ? std::pow(10.0, s.decimals) : 1.0;
      long long klo = static_cast<long long>(std::ceil(lo * scale)), khi = static_cast<long long>(std::floor(hi * scale));
      if (khi < klo) khi = klo;
      long long k = rng.Range(klo, khi);
      // Wide ranges: mostly everyday magnitudes (12, 250), sometimes the long tail (48,213).
      // The magnitudes count from a lower bound above 10 (up to 10x and 100x it), so that a
      // range such as 1,000-500,000 does not pile up at its minimum; below 10 they are 100 and 1,000.
      if (khi - klo > 1000 * scale) {
        const double r = rng.Uniform();
        const double base = std::max(10 * scale, static_cast<double>(klo));
        const double top = r < 0.55 ? 10 * base : r < 0.85 ? 100 * base : static_cast<double>(khi);
        const long long cap = std::max(klo, std::min(khi, static_cast<long long>(top)));
        k = rng.Range(klo, cap);
      }
      if (s.kind == SlotKind::kInt && s.step > 1 && rng.Chance(0.5)) {
        const long long a = (klo + s.step - 1) / s.step, z = khi / s.step;
        if (z >= a) k = rng.Range(a, z) * s.step;
      }
      if (s.kind == SlotKind::kNumber && rng.Chance(0.3)) k = (k / static_cast<long long>(scale)) * static_cast<long long>(scale);
      if (k < klo) k = klo;
      v.number = static_cast<double>(k) / scale;
      v.surface = NumberSurface(s, v.number, rng);
      break;
    }
    case SlotKind::kDuration: {
      const DurationForm f = DrawDuration(rep, b, s, rng);
      v.number = static_cast<double>(f.seconds), v.surface = f.surface;
      break;
    }
    case SlotKind::kDistance: {
      const DurationForm f = DrawDistance(rep, b, s, rng);
      v.number = static_cast<double>(f.seconds), v.surface = f.surface;
      break;
    }
    case SlotKind::kTime:
      DrawClock(v.hour, v.minute, rng);
      v.surface = TimeSurface(v.hour, v.minute, rng);
      break;
    case SlotKind::kDate: {
      DrawDate(ctx, rep, s.absolute, rng, v, v.lead);
      if (s.absolute) v.lead.clear();
      break;
    }
    case SlotKind::kEnum: {
      std::vector<const EnumValue*> ok;
      for (const auto& e : s.values)
        if (!b || rep != Rep::kEnum || b->enum_map.count(e.id)) ok.push_back(&e);
      if (rep == Rep::kBool) {
        // A boolean covers the true value and its opposite (the first other value).
        ok.clear();
        for (const auto& e : s.values)
          if (e.id == s.bool_true || (ok.size() < 2 && e.id != s.bool_true)) ok.push_back(&e);
      }
      const EnumValue* e = ok[rng.Below(ok.size())];
      v.enum_id = e->id;
      v.surface = rng.Pick(e->surfaces);
      break;
    }
    case SlotKind::kItems: {
      const int n = static_cast<int>(rng.Range(s.list_min, s.list_max));
      std::string text;
      for (int i = 0; i < n; ++i) {
        std::map<std::string, SlotValue> rec;
        const Pattern& line = s.lines[rng.Below(s.lines.size())];
        std::set<std::string> wanted(line.all_slots());
        const Rendered r = line.Render(rng, wanted);
        std::map<std::string, std::string> surf;
        for (const std::string& fid : r.slots) {
          const SlotDef* f = nullptr;
          for (const auto& x : s.fields)
            if (x.id == fid) f = &x;
          const ParamBinding* fb = nullptr;
          if (b)
            for (const auto& x : b->fields)
              if (x.slot == fid) fb = &x;
          SlotValue fv = DrawValue(*f, fb, ctx, rng);
          surf[fid] = fv.lead + fv.surface;
          rec[fid] = std::move(fv);
        }
        text += (i ? "\n" : "") + JoinSegments(r.segments, surf);
        v.records.push_back(std::move(rec));
      }
      v.surface = text;
      break;
    }
  }
  return v;
}

ojson AnswerValue(const SlotValue& v, const SlotDef& slot, const ParamBinding& b, const SlotValue* time,
                  const ValueContext& ctx) {
  auto num = [](double x) -> ojson {
    if (std::floor(x) == x && std::fabs(x) < 9e15) return ojson(static_cast<long long>(x));
    return ojson(x);
  };
  switch (b.rep) {
    case Rep::kCopy:
      return v.surface;
    case Rep::kInt:
    case Rep::kNumber:
      if (v.bound == "max") return num(b.max);
      if (v.bound == "min") return num(b.min);
      if (b.rep == Rep::kInt) return static_cast<long long>(std::llround(v.number));
      return num(v.number);
    case Rep::kTime24: return Time24(v.hour, v.minute);
    case Rep::kDate: return IsoDate(v.date);
    case Rep::kDateTime: return IsoDate(v.date) + "T" + Time24(time ? time->hour : 0, time ? time->minute : 0) + ":00";
    case Rep::kSeconds: return static_cast<long long>(std::llround(v.number));
    case Rep::kMinutes: return num(v.number / 60.0);
    case Rep::kHours: return num(v.number / 3600.0);
    case Rep::kMeters: return num(v.number / 100.0);
    case Rep::kCentimeters: return static_cast<long long>(std::llround(v.number));
    case Rep::kEnum: {
      auto it = b.enum_map.find(v.enum_id);
      if (it == b.enum_map.end()) throw Error(ErrorCode::kInternal, "enum value '" + v.enum_id + "' not declared by " + b.name);
      return it->second;
    }
    case Rep::kBool: return v.enum_id == slot.bool_true;
    case Rep::kStringList: {
      ojson a = ojson::array();
      for (const auto& x : v.items) a.push_back(x);
      return a;
    }
    case Rep::kObjectList: {
      ojson a = ojson::array();
      for (const auto& rec : v.records) {
        ojson o = ojson::object();
        for (const ParamBinding& fb : b.fields) {
          auto it = rec.find(fb.slot);
          if (fb.slot.empty() || it == rec.end()) continue;
          const SlotDef* fs = nullptr;
          for (const auto& f : slot.fields)
            if (f.id == fb.slot) fs = &f;
          o[fb.name] = AnswerValue(it->second, *fs, fb, nullptr, ctx);
        }
        a.push_back(o);
      }
      return a;
    }
  }
  return v.surface;
}

std::string ReasonFragment(const SlotValue& v, const ParamBinding& b, const ojson& answer, const SlotValue* time) {
  std::string span = v.assigned ? v.cue : v.surface;
  if (!v.fact.empty()) return "'" + ShortSpan(v.surface) + "' (" + v.fact + " fact) -> " + b.name;
  if (b.rep == Rep::kDateTime && time) span = v.surface + " " + time->surface;
  if (b.rep == Rep::kObjectList) return std::to_string(v.records.size()) + " items -> " + b.name;
  std::string out = "'" + ShortSpan(span) + "' -> " + b.name;
  if (b.rep == Rep::kCopy || b.rep == Rep::kStringList) return out;
  std::string shown = answer.is_string() ? answer.get<std::string>() : answer.dump();
  out += " " + shown;
  if (v.bound == "max") out += " (maximum)";
  if (v.bound == "min") out += " (minimum)";
  if ((b.rep == Rep::kDate || b.rep == Rep::kDateTime) && v.date_how == "relative") out += " (from date)";
  return out;
}

}  // namespace needle::data

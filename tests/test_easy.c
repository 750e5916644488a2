/*
 * test_easy.c - the concise API (disp/easy.h): results, scopes, the first
 * error of a chain, options with their defaults, enums, autograd verbs.
 */
#include <math.h>
#include <string.h>

#include <disp.h>

#include "test.h"
#ifdef DISP_FAULT_INJECTION
#include "alloc_internal.h"
#endif

/* Element i of a contiguous float32 tensor. */
static float at(const disp_tensor *t, int64_t i) { return ((const float *)disp_tensor_data_ptr(t))[i]; }

static size_t storage_refs(const disp_tensor *t) { return disp_storage_refcount(disp_tensor_storage(t)); }

TEST(from_copies_c_data) {
  float x[] = {1, 2, 3, 4, 5, 6};
  int64_t n[] = {7, 8};
  disp_tensor *t = disp_from(x, 2, 3), *i = disp_from(n, 2);
  ASSERT_TRUE(t && i);
  x[0] = 100; /* a copy: the tensor keeps 1 */
  ASSERT_EQ_INT(disp_tensor_ndim(t), 2);
  ASSERT_EQ_INT(disp_tensor_sizes(t)[1], 3);
  ASSERT_TRUE(at(t, 0) == 1 && at(t, 5) == 6);
  ASSERT_EQ_INT(disp_tensor_dtype(i), DISP_DTYPE_INT64);
  ASSERT_EQ_INT(((int64_t *)disp_tensor_data_ptr(i))[1], 8);
  ASSERT_EQ_INT(disp_tensor_refcount(t), 1); /* no scope: the caller's */
  disp_tensor_release(t), disp_tensor_release(i);
  ASSERT_TRUE(disp_from(x, 2, -3) == NULL);
  ASSERT_CONTAINS(disp_last_error(), "disp_from: negative size -3");
  return 0;
}

TEST(hello_world_values) {
  disp_scope s = disp_scope_begin();
  float x[] = {1, -2, 3, -4, 5, -6}, y[] = {6, 5, 4, 3, 2, 1};
  disp_tensor *r = disp_relu(disp_add(disp_from(x, 2, 3), disp_from(y, 2, 3)));
  ASSERT_TRUE(r != NULL);
  const float want[] = {7, 3, 7, 0, 7, 0};
  for (int k = 0; k < 6; k++) ASSERT_TRUE(at(r, k) == want[k]);
  disp_scope_end(&s);
  return 0;
}

TEST(scope_releases_and_keep_survives) {
  float x[] = {1, 2, 3, 4};
  disp_tensor *base = disp_from(x, 4), *kept = NULL;
  ASSERT_EQ_INT(storage_refs(base), 1);
  DISP_SCOPE {
    disp_tensor *v = disp_view(base, DISP_DIMS(2, 2)); /* shares base's storage */
    ASSERT_EQ_INT(storage_refs(base), 2);
    ASSERT_EQ_INT(disp_tensor_refcount(v), 1); /* the scope's one reference */
    kept = disp_keep(disp_neg(v));
    ASSERT_EQ_INT(disp_tensor_refcount(kept), 2);
  }
  ASSERT_EQ_INT(storage_refs(base), 1); /* the view went with the scope */
  ASSERT_EQ_INT(disp_tensor_refcount(kept), 1);
  ASSERT_TRUE(at(kept, 3) == -4);
  disp_tensor_release(kept), disp_tensor_release(base);
  return 0;
}

TEST(scopes_nest) {
  float x[] = {1, 2};
  disp_tensor *base = disp_from(x, 2);
  disp_scope outer = disp_scope_begin();
  disp_tensor *a = disp_view(base, DISP_DIMS(2, 1));
  DISP_SCOPE {
    disp_tensor *b = disp_view(a, DISP_DIMS(1, 2));
    ASSERT_TRUE(b != NULL);
    ASSERT_EQ_INT(storage_refs(base), 3);
  }
  ASSERT_EQ_INT(storage_refs(base), 2); /* the inner one's went; a stays */
  ASSERT_EQ_INT(disp_tensor_sizes(a)[0], 2);
  disp_scope_end(&outer);
  ASSERT_EQ_INT(storage_refs(base), 1);
  disp_scope_end(&outer); /* a second end does nothing */
  /* Ending the outer scope first closes the inner one with it. */
  disp_scope o2 = disp_scope_begin();
  disp_scope i2 = disp_scope_begin();
  ASSERT_TRUE(disp_view(base, DISP_DIMS(2)) != NULL);
  disp_scope_end(&o2);
  ASSERT_EQ_INT(storage_refs(base), 1);
  disp_scope_end(&i2);
  disp_tensor *r = disp_relu(base); /* no scope left: the caller's */
  ASSERT_TRUE(r != NULL && disp_tensor_refcount(r) == 1 && disp_tensor_refcount(base) == 1);
  disp_tensor_release(r), disp_tensor_release(base);
  return 0;
}

TEST(chain_keeps_its_first_error) {
  DISP_SCOPE {
    disp_tensor *a = disp_ones(DISP_SHAPE(2, 3)), *b = disp_ones(DISP_SHAPE(4));
    disp_tensor *r = disp_sum(disp_relu(disp_mul(disp_add(a, b), a)));
    ASSERT_TRUE(r == NULL);
    ASSERT_CONTAINS(disp_last_error(), "must match the size of tensor b");
    ASSERT_FALSE(strstr(disp_last_error(), "is NULL"));
    ASSERT_TRUE(disp_print(r) != DISP_OK && !strstr(disp_last_error(), "is NULL"));
    ASSERT_TRUE(disp_backward(r) != DISP_OK && !strstr(disp_last_error(), "is NULL"));
    ASSERT_TRUE(isnan(disp_item(r)));
    /* A NULL of the caller's own, with no failure before it, is named. */
    disp_clear_error();
    ASSERT_TRUE(disp_relu(NULL) == NULL);
    ASSERT_EQ_STR(disp_last_error(), "disp_relu: self is NULL");
    disp_clear_error();
    ASSERT_TRUE(disp_add(a, NULL) == NULL);
    ASSERT_EQ_STR(disp_last_error(), "disp_add_with: other is NULL");
    disp_clear_error();
    ASSERT_TRUE(disp_cat(DISP_TENSORS(a, NULL)) == NULL);
    ASSERT_EQ_STR(disp_last_error(), "disp_cat_with: tensors[1] is NULL");
    disp_clear_error();
    ASSERT_STATUS(disp_print(NULL), DISP_ERR_INVALID_ARG);
    ASSERT_EQ_STR(disp_last_error(), "disp_print: t is NULL");
  }
  return 0;
}

TEST(options_take_defaults_and_overrides) {
  DISP_SCOPE {
    float x[] = {1, 2, 3, 4, 5, 6};
    disp_tensor *t = disp_from(x, 2, 3);
    ASSERT_TRUE(disp_item(disp_sum(t)) == 21); /* dim omitted: None, all */
    disp_tensor *rows = disp_sum(t, .dim = DISP_DIMS(1), .keepdim = true);
    ASSERT_EQ_INT(disp_tensor_ndim(rows), 2);
    ASSERT_TRUE(at(rows, 0) == 6 && at(rows, 1) == 15);
    ASSERT_EQ_INT(disp_tensor_ndim(disp_sum(t, .dim = DISP_DIMS(1))), 1);
    /* (clang runs the _Pragma of a macro argument early: options inside
     * another macro's argument, as ASSERT_TRUE's, would warn; see easy.h) */
    disp_tensor *a1 = disp_add(t, t), *a3 = disp_add(t, t, .alpha = 3), *a0 = disp_add(t, t, .alpha = 0);
    ASSERT_TRUE(at(a1, 1) == 4); /* alpha = 1 */
    ASSERT_TRUE(at(a3, 1) == 8); /* 2 + 3 * 2 */
    ASSERT_TRUE(at(a0, 1) == 2); /* an explicit 0 is 0 */
    disp_tensor *hi = disp_clamp(t, .max = 4), *lo = disp_clamp(t, .min = 2.5);
    ASSERT_TRUE(at(hi, 5) == 4 && at(hi, 0) == 1);
    ASSERT_TRUE(at(lo, 0) == 2.5f);
    /* conv2d: stride 1, padding 0 by default; padding by name */
    disp_tensor *img = disp_ones(DISP_SHAPE(1, 1, 4, 4)), *w = disp_ones(DISP_SHAPE(1, 1, 3, 3));
    ASSERT_EQ_INT(disp_tensor_sizes(disp_conv2d(img, w))[3], 2);
    disp_tensor *padded = disp_conv2d(img, w, .padding = DISP_DIMS(1, 1), .bias = disp_full(DISP_SHAPE(1), 0.5));
    ASSERT_EQ_INT(disp_tensor_sizes(padded)[3], 4);
    ASSERT_TRUE(at(padded, 0) == 4.5f && at(padded, 5) == 9.5f);
    /* losses: mean by default, sum by name */
    float lg[] = {0, 0, 0, 0};
    int64_t tg[] = {0, 1};
    disp_tensor *logits = disp_from(lg, 2, 2), *target = disp_from(tg, 2);
    ASSERT_TRUE(fabs(disp_item(disp_cross_entropy(logits, target)) - log(2.0)) < 1e-6);
    disp_tensor *ce_sum = disp_cross_entropy(logits, target, .reduction = DISP_REDUCTION_SUM);
    ASSERT_TRUE(fabs(disp_item(ce_sum) - 2 * log(2.0)) < 1e-6);
    ASSERT_TRUE(fabs(disp_item(disp_mse_loss(t, disp_zeros(DISP_SHAPE(2, 3)))) - 91.0 / 6) < 1e-5);
    disp_tensor *mse_sum = disp_mse_loss(t, disp_zeros(DISP_SHAPE(2, 3)), .reduction = DISP_REDUCTION_SUM);
    ASSERT_TRUE(disp_item(mse_sum) == 91);
    ASSERT_EQ_INT(disp_tensor_sizes(disp_max_pool2d(img, DISP_DIMS(2, 2)))[2], 2); /* stride = kernel */
  }
  return 0;
}

TEST(enums_and_constructors) {
  DISP_SCOPE {
    float x[] = {1, 2};
    disp_tensor *t = disp_from(x, 2);
    disp_tensor *s64 = disp_sum(t, .dtype = DISP_DTYPE_FLOAT64);
    ASSERT_EQ_INT(disp_tensor_dtype(s64), DISP_DTYPE_FLOAT64);
    ASSERT_EQ_INT(disp_tensor_dtype(disp_sum(t)), DISP_DTYPE_FLOAT32);
    disp_tensor *z = disp_zeros(DISP_SHAPE(2, 3), .dtype = DISP_DTYPE_INT64);
    ASSERT_EQ_INT(disp_tensor_dtype(z), DISP_DTYPE_INT64);
    ASSERT_EQ_INT(disp_tensor_numel(z), 6);
    ASSERT_TRUE(disp_item(disp_sum(disp_full(DISP_SHAPE(3), 2.5))) == 7.5);
    ASSERT_TRUE(disp_item(disp_scalar(4)) == 4 && disp_tensor_ndim(disp_scalar(4)) == 0);
    disp_tensor *rg = disp_rand(DISP_SHAPE(2), .requires_grad = true);
    ASSERT_TRUE(disp_tensor_requires_grad(rg));
    disp_tensor *r = disp_rand(DISP_SHAPE(100));
    ASSERT_TRUE(disp_item(disp_amax(r)) < 1 && disp_item(disp_amax(disp_neg(r))) <= 0);
    ASSERT_EQ_INT(disp_tensor_dtype(disp_argmax(t)), DISP_DTYPE_INT64);
    ASSERT_TRUE(disp_item(disp_argmax(t)) == 1);
  }
  return 0;
}

static int g_deleted;
static void count_delete(void *data, void *ctx) {
  (void)data;
  g_deleted += *(int *)ctx;
}

TEST(borrow_runs_deleter_once) {
  float x[] = {1, 2, 3, 4};
  int one = 1;
  g_deleted = 0;
  DISP_SCOPE {
    disp_tensor *t = disp_borrow(x, DISP_DTYPE_FLOAT32, DISP_DIMS(2, 2), count_delete, &one);
    x[3] = 40; /* no copy: the tensor sees it */
    ASSERT_TRUE(at(t, 3) == 40);
    ASSERT_EQ_INT(disp_tensor_strides(t)[0], 2);
  }
  ASSERT_EQ_INT(g_deleted, 1);
  ASSERT_TRUE(disp_borrow(x, DISP_DTYPE_FLOAT32, DISP_DIMS(-1), count_delete, &one) == NULL);
  ASSERT_TRUE(disp_borrow(x, DISP_DTYPE_QUINT8, DISP_DIMS(1), count_delete, &one) == NULL);
  ASSERT_EQ_INT(g_deleted, 1); /* refused: nothing taken */
  return 0;
}

TEST(autograd_verbs) {
  DISP_SCOPE {
    float x[] = {1, -2, 3};
    disp_tensor *w = disp_requires_grad(disp_from(x, 3));
    ASSERT_OK(disp_backward(disp_sum(disp_mul(w, w))));
    disp_tensor *g = disp_grad(w);
    ASSERT_TRUE(g && at(g, 0) == 2 && at(g, 1) == -4 && at(g, 2) == 6);
    ASSERT_TRUE(disp_grad(disp_from(x, 3)) == NULL);
    ASSERT_CONTAINS(disp_last_error(), "disp_grad: the tensor has no gradient");
    ASSERT_TRUE(disp_grad_mode_enabled());
    DISP_NO_GRAD {
      ASSERT_FALSE(disp_grad_mode_enabled());
      ASSERT_FALSE(disp_tensor_requires_grad(disp_mul(w, w)));
      DISP_NO_GRAD { ASSERT_FALSE(disp_grad_mode_enabled()); }
      ASSERT_FALSE(disp_grad_mode_enabled());
    }
    ASSERT_TRUE(disp_grad_mode_enabled());
    ASSERT_TRUE(disp_tensor_requires_grad(disp_mul(w, w)));
    /* the nn verbs on a tiny net */
    disp_tensor *in = disp_ones(DISP_SHAPE(2, 3)), *wt = disp_ones(DISP_SHAPE(4, 3), .requires_grad = true);
    disp_tensor *h = disp_relu(disp_linear(in, wt, .bias = disp_zeros(DISP_SHAPE(4))));
    disp_tensor *p = disp_softmax(h, 1);
    ASSERT_TRUE(fabs(disp_item(disp_sum(p)) - 2) < 1e-6);
    ASSERT_TRUE(fabs(at(disp_log_softmax(h, 1), 0) - log(0.25)) < 1e-6);
  }
  return 0;
}

/* Note [Failed scopes]: after a failure in the innermost scope the verbs
 * that change state do nothing and return its status; the parameters and
 * gradients stay; the scope's end reports it; a new scope starts clean. */
TEST(failed_scope_stops_the_verbs) {
  float x[] = {1, -2, 3};
  disp_tensor *w = disp_requires_grad(disp_from(x, 3));
  disp_adam_options o = disp_adam_options_default();
  disp_optimizer *opt = NULL;
  ASSERT_OK(disp_optim_adam_new(&w, 1, &o, &opt));
  disp_scope s = disp_scope_begin();
  ASSERT_OK(disp_backward(disp_sum(disp_mul(w, w)))); /* grad 2w */
  disp_scope ok = disp_scope_begin();
  ASSERT_STATUS(disp_scope_end(&ok), DISP_OK);
  disp_scope inner = disp_scope_begin();
  disp_tensor *loss = disp_sum(disp_add(w, disp_ones(DISP_SHAPE(4)))); /* shapes differ */
  ASSERT_TRUE(loss == NULL);
  disp_status failed = disp_last_status();
  ASSERT_TRUE(failed != DISP_OK);
  ASSERT_STATUS(disp_zero_grad(opt), failed);
  ASSERT_STATUS(disp_backward(loss), failed);
  ASSERT_STATUS(disp_step(opt), failed);
  ASSERT_CONTAINS(disp_last_error(), "must match the size of tensor b");
  ASSERT_TRUE(at(w, 0) == 1 && at(w, 1) == -2 && at(w, 2) == 3);
  ASSERT_TRUE(at(disp_tensor_grad(w), 1) == -4);
  ASSERT_STATUS(disp_scope_end(&inner), failed);
  ASSERT_STATUS(disp_scope_end(&s), failed); /* the failure was inside it too */
  /* a failure before a scope began does not stop that scope's verbs */
  s = disp_scope_begin();
  ASSERT_OK(disp_zero_grad(opt));
  ASSERT_TRUE(at(disp_tensor_grad(w), 1) == 0); /* zeroed in place, as 1.13 */
  ASSERT_OK(disp_backward(disp_sum(disp_mul(w, w))));
  ASSERT_OK(disp_step(opt));
  ASSERT_TRUE(at(w, 0) < 1 && at(w, 1) > -2); /* Adam moved each by about lr */
  ASSERT_STATUS(disp_scope_end(&s), DISP_OK);
  disp_clear_error();
  ASSERT_STATUS(disp_step(NULL), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_step: opt is NULL");
  ASSERT_STATUS(disp_zero_grad(NULL), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_zero_grad: opt is NULL");
  disp_optim_free(opt);
  disp_tensor_release(w);
  return 0;
}

/* Options written inside another concise call's arguments compile without
 * a warning under -Wextra -Werror with gcc and clang (Note [Concise
 * argument types]): the nesting models.c's CNN uses. */
TEST(nested_options) {
  DISP_SCOPE {
    disp_tensor *x = disp_ones(DISP_SHAPE(1, 1, 4, 4)), *w = disp_ones(DISP_SHAPE(1, 1, 3, 3));
    disp_tensor *y = disp_max_pool2d(disp_relu(disp_conv2d(x, w, .padding = DISP_DIMS(1, 1))), DISP_DIMS(2, 2));
    ASSERT_TRUE(y && disp_tensor_sizes(y)[2] == 2 && at(y, 0) == 9); /* max of the corner block: corner 4, edges 6, inner 9 */
    /* a str option (gelu's approximate), default and given */
    disp_tensor *one = disp_ones(DISP_SHAPE(1));
    ASSERT_TRUE(fabs(disp_item(disp_gelu(one)) - 0.8413447) < 1e-6);
    ASSERT_TRUE(fabs(disp_item(disp_gelu(one, .approximate = "tanh")) - 0.8411920) < 1e-6);
    ASSERT_TRUE(disp_gelu(one, .approximate = "fast") == NULL);
    ASSERT_CONTAINS(disp_last_error(), "approximate");
    ASSERT_TRUE(disp_item(disp_sum(disp_eq(disp_argmax(x, .dim = 1), disp_zeros(DISP_SHAPE(1, 4, 4), .dtype = DISP_DTYPE_INT64)))) == 16);
  }
  return 0;
}

#ifdef DISP_FAULT_INJECTION
/* The scope's array cannot grow: the call fails cleanly, its result
 * released (LeakSanitizer checks), and the scope still works. */
TEST(scope_growth_failure) {
  disp_tensor *x = disp_ones(DISP_SHAPE(2));
  disp_scope s = disp_scope_begin();
  disp__fault_arm(0, 0);
  ASSERT_TRUE(disp_relu(x) != NULL);
  long n = disp__fault_count(); /* the last one grew the scope */
  disp_scope_end(&s);
  s = disp_scope_begin();
  disp__fault_arm(n, 0);
  ASSERT_TRUE(disp_relu(x) == NULL);
  disp__fault_arm(0, 0);
  ASSERT_STATUS(disp_set_error(DISP_OK, "%s", ""), DISP_OK);
  disp_scope_end(&s);
  ASSERT_EQ_INT(disp_tensor_refcount(x), 1);
  s = disp_scope_begin();
  ASSERT_TRUE(disp_relu(x) != NULL);
  disp_scope_end(&s);
  disp_tensor_release(x);
  return 0;
}
#endif

/* disp_split: views of the input owned by the scope, and every refusal
 * leaves out all NULL. */
TEST(split_gives_scope_owned_views) {
  float x[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  disp_tensor *base = disp_from(x, 2, 6), *p[3] = {NULL, NULL, NULL};
  ASSERT_TRUE(base != NULL);
  DISP_SCOPE {
    ASSERT_EQ_INT(disp_split(base, 4, 1, p, 3), 2);
    ASSERT_TRUE(p[2] == NULL);
    ASSERT_EQ_INT(disp_tensor_sizes(p[0])[1], 4);
    ASSERT_EQ_INT(disp_tensor_sizes(p[1])[1], 2);
    ASSERT_TRUE(disp_tensor_storage(p[1]) == disp_tensor_storage(base)); /* views */
    ASSERT_TRUE(at(p[1], 0) == 4 && ((const float *)disp_tensor_data_ptr(p[1]))[6] == 10);
    ASSERT_EQ_INT(disp_tensor_refcount(p[0]), 1); /* the scope's one reference */
    ASSERT_EQ_INT(disp_split(base, 1, 1, p, 3), -1); /* six pieces */
    ASSERT_CONTAINS(disp_last_error(), "disp_split: 6 pieces do not fit in the 3 given");
    ASSERT_TRUE(!p[0] && !p[1] && !p[2]);
  }
  ASSERT_EQ_INT(storage_refs(base), 1); /* the pieces went with the scope */
  DISP_SCOPE {
    ASSERT_EQ_INT(disp_split(base, 2, 5, p, 3), -1);
    ASSERT_CONTAINS(disp_last_error(), "Dimension out of range");
    ASSERT_EQ_INT(disp_split(NULL, 2, 0, p, 3), -1);
    ASSERT_EQ_INT(disp_split(base, 2, 0, NULL, 3), -1);
    ASSERT_EQ_INT(disp_split(base, 2, 0, p, -1), -1);
  }
  disp_tensor_release(base);
  return 0;
}

TEST_LIST = {
    TEST_ENTRY(from_copies_c_data),
    TEST_ENTRY(hello_world_values),
    TEST_ENTRY(scope_releases_and_keep_survives),
    TEST_ENTRY(scopes_nest),
    TEST_ENTRY(chain_keeps_its_first_error),
    TEST_ENTRY(options_take_defaults_and_overrides),
    TEST_ENTRY(enums_and_constructors),
    TEST_ENTRY(borrow_runs_deleter_once),
    TEST_ENTRY(autograd_verbs),
    TEST_ENTRY(failed_scope_stops_the_verbs),
    TEST_ENTRY(nested_options),
    TEST_ENTRY(split_gives_scope_owned_views),
#ifdef DISP_FAULT_INJECTION
    TEST_ENTRY(scope_growth_failure),
#endif
    TEST_END,
};

TEST_MAIN()

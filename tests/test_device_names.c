/*
 * test_device_names.c - issue 11: PrivateUse2 and PrivateUse3 take device
 * names of their own (disp_device_rename_backend), so three plugins can be
 * loaded at once, each with its name; names stay unique across the three.
 * Its own program: renames last for the process.
 */
#include <disp.h>

#include "test.h"

TEST(second_and_third_backends_are_named) {
  ASSERT_OK(disp_device_rename_backend(DISP_BACKEND_PRIVATEUSE2, "secondreg"));
  ASSERT_OK(disp_device_rename_backend(DISP_BACKEND_PRIVATEUSE3, "thirdreg"));
  ASSERT_OK(disp_device_rename_backend(DISP_BACKEND_PRIVATEUSE2, "secondreg")); /* the same name again: fine */
  ASSERT_EQ_STR(disp_device_type_name(DISP_BACKEND_PRIVATEUSE2), "secondreg");
  ASSERT_EQ_STR(disp_device_type_name(DISP_BACKEND_PRIVATEUSE3), "thirdreg");
  ASSERT_EQ_STR(disp_device_type_name(DISP_BACKEND_PRIVATEUSE1), "privateuseone");
  disp_device d;
  ASSERT_OK(disp_device_parse("secondreg:1", &d));
  ASSERT_EQ_INT(d.type, DISP_BACKEND_PRIVATEUSE2);
  ASSERT_EQ_INT(d.index, 1);
  ASSERT_OK(disp_device_parse("thirdreg", &d));
  ASSERT_EQ_INT(d.type, DISP_BACKEND_PRIVATEUSE3);
  ASSERT_OK(disp_device_parse("privateusetwo:0", &d)); /* the built-in name still parses */
  ASSERT_EQ_INT(d.type, DISP_BACKEND_PRIVATEUSE2);
  char buf[32];
  disp_device_format(disp_device_make(DISP_BACKEND_PRIVATEUSE3, 2), buf, sizeof buf);
  ASSERT_EQ_STR(buf, "thirdreg:2");
  return 0;
}

TEST(names_stay_unique_and_in_tree_names_are_refused) {
  ASSERT_OK(disp_device_rename_backend(DISP_BACKEND_PRIVATEUSE2, "secondreg"));
  ASSERT_STATUS(disp_device_rename_backend(DISP_BACKEND_PRIVATEUSE1, "secondreg"), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(),
                "rename_privateuse1_backend: 'secondreg' is already the name of device type PrivateUse2");
  ASSERT_STATUS(disp_device_rename_backend(DISP_BACKEND_PRIVATEUSE2, "other"), DISP_ERR_DUPLICATE);
  ASSERT_EQ_STR(disp_last_error(),
                "torch.register_privateuse2_backend() has already been set! Current backend: secondreg");
  ASSERT_STATUS(disp_device_rename_backend(DISP_BACKEND_PRIVATEUSE1, "cuda"), DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(disp_device_rename_backend(DISP_BACKEND_CPU, "mine"), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "only PrivateUse1, PrivateUse2 and PrivateUse3 can be renamed, not CPU");
  ASSERT_STATUS(disp_device_rename_backend((disp_backend)99, "mine"), DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(disp_device_rename_backend(DISP_BACKEND_PRIVATEUSE3, NULL), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_device_type_name(DISP_BACKEND_PRIVATEUSE1), "privateuseone");
  return 0;
}

TEST_LIST = {
    TEST_ENTRY(second_and_third_backends_are_named),
    TEST_ENTRY(names_stay_unique_and_in_tree_names_are_refused),
    TEST_END};
TEST_MAIN()

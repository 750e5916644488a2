/*
 * test_optim.c - disp/optim.h: SGD, Adam and AdamW against libtorch 1.13's
 * torch::optim over six steps, their option checks with 1.13's messages,
 * lazy state, skipped parameters, zero_grad both ways, bad arguments.
 *
 * The reference numbers (kRef) were printed by tools/optim_ref.cpp, built by
 * hand (the command is in its header) against Debian's libtorch 1.13.1
 * (libtorch-dev 1.13.1+dfsg-4, whose version.h says 1.13.0) and run on an
 * x86-64 machine with AVX2, where ATen picks its AVX2 kernels. It runs
 * torch::optim::SGD/Adam/AdamW (the C++ frontend) and checks, on the same
 * inputs, that they agree exactly with a rewrite of Python 1.13's
 * _single_tensor_sgd/_adam/_adamw in ATen calls (the largest difference it
 * printed was 0 for every configuration). Every value is exactly what
 * libtorch computed (%.9g for float32, %.17g for float64). p3's first 16
 * elements go through the vector loops (ATen's and ours), the rest and p0,
 * p1 through the scalar ones.
 *
 * The problem: parameters p0 [2,3], p1 [4], p2 [3] and p3 [21] start at
 * init_value; before step t (1..6) every parameter but p2 gets the gradient
 * grad_value(k, i, t) (p2 never has one, so it and its state must stay as
 * they are). All inputs are exact binary fractions. A row of kRef holds p0
 * and p1 after each step, then p3 after the last.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <disp.h>
#include <disp/autograd.h>

#include "test.h"

enum { SGD, ADAM, ADAMW };

typedef struct config {
  const char *name;
  int kind;
  double lr, momentum, dampening, weight_decay;
  int nesterov;
  double beta1, beta2, eps;
  int amsgrad, f64;
} config;

/* tools/optim_ref.cpp's kConfigs, in its order. */
static const config kConfigs[] = {
    {"sgd_plain", SGD, 0.1, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"sgd_momentum", SGD, 0.05, 0.9, 0, 0, 0, 0, 0, 0, 0, 0},
    {"sgd_dampening_wd", SGD, 0.05, 0.9, 0.1, 0.01, 0, 0, 0, 0, 0, 0},
    {"sgd_nesterov_wd", SGD, 0.03, 0.8, 0, 0.001, 1, 0, 0, 0, 0, 0},
    {"sgd_momentum_f64", SGD, 0.05, 0.9, 0.25, 0.02, 0, 0, 0, 0, 0, 1},
    {"adam_default", ADAM, 1e-3, 0, 0, 0, 0, 0.9, 0.999, 1e-8, 0, 0},
    {"adam_lr_wd", ADAM, 0.01, 0, 0, 0.1, 0, 0.9, 0.999, 1e-8, 0, 0},
    {"adam_amsgrad", ADAM, 0.02, 0, 0, 0, 0, 0.8, 0.99, 1e-6, 1, 0},
    {"adam_amsgrad_f64", ADAM, 0.02, 0, 0, 0.05, 0, 0.8, 0.99, 1e-6, 1, 1},
    {"adamw_default", ADAMW, 1e-3, 0, 0, 1e-2, 0, 0.9, 0.999, 1e-8, 0, 0},
    {"adamw_amsgrad", ADAMW, 0.01, 0, 0, 0.1, 0, 0.85, 0.995, 1e-7, 1, 0},
    {"adamw_no_wd", ADAMW, 0.01, 0, 0, 0, 0, 0.9, 0.999, 1e-8, 0, 0},
};
#define NCONFIGS (sizeof kConfigs / sizeof kConfigs[0])
#define NSTEPS 6
/* The loops round as ATen does (Note [Optimizer rounding]): no difference at all. */
#define MAX_ULPS 0
#define NREF (NSTEPS * 10 + 21)
static const int64_t kNumel[4] = {6, 4, 3, 21};

/* clang-format off */
static const double kRef[NCONFIGS][NREF] = {
  /* sgd_plain */ {
    -0.3828125,-0.290625006,-0.1171875,-0.0250000004,0.15625,0.248437494,-0.151562497,0.0218749996,0.114062503,0.206249997,
    -0.354687512,-0.296875,-0.150000006,-0.0109374998,0.143749997,0.282812506,-0.142187491,-0.00312500075,0.143749997,0.201562494,
    -0.371875018,-0.260937512,-0.150000006,-0.0390625,0.168750003,0.271874994,-0.178124994,0.0140624996,0.125,0.235937491,
    -0.353125006,-0.271875024,-0.190625012,-0.0281249993,0.150000006,0.296875,-0.178124994,-0.015625,0.146874994,0.228124991,
    -0.371875018,-0.240625024,-0.190625012,-0.0593749993,0.168750003,0.284375012,-0.215624988,-0.00312499981,0.128124997,0.259375006,
    -0.354687512,-0.256250024,-0.157812506,-0.0593749993,0.143749997,0.307812512,-0.217187494,-0.0375000015,0.142187491,0.240625009,
    0.301562518,0.481250018,0.660937428,0.759374917,0.800000012,0.964062512,1.14375007,0.36718747,0.465625048,0.587500036,0.751562536,0.931250036,0.948437512,1.046875,0.375,0.5390625,0.637499988,0.654687464,0.834374964,1.0374999,1.12031245},
  /* sgd_momentum */ {
    -0.37890625,-0.270312488,-0.12109375,-0.0125000002,0.140625,0.249218747,-0.138281256,0.0109374998,0.119531251,0.228125006,
    -0.368359387,-0.291718751,-0.133984372,-0.0167187508,0.1484375,0.265703112,-0.145546883,0.00828124955,0.129453123,0.206093758,
    -0.367460936,-0.293015629,-0.145585939,-0.0345781259,0.16796875,0.27507031,-0.170054689,0.0144843739,0.129007816,0.203453138,
    -0.357277334,-0.299651563,-0.17633985,-0.045182813,0.176171869,0.296000779,-0.192111716,0.00522343628,0.139544532,0.197170332,
    -0.357487112,-0.289998919,-0.204018369,-0.0703520328,0.192929685,0.308588207,-0.23071304,0.00313859247,0.13965258,0.207140803,
    -0.349082142,-0.289124042,-0.212522775,-0.093004331,0.195511714,0.331635624,-0.266235471,-0.0159252677,0.146781072,0.206739232,
    0.306706727,0.466850221,0.719723344,0.71350342,0.761133909,0.987424552,1.14756787,0.335089028,0.409127414,0.566851735,0.793142378,0.953285813,0.876097441,1.0492202,0.372569472,0.598860145,0.592640162,0.604627728,0.854937971,1.05328727,1.08922589},
  /* sgd_dampening_wd */ {
    -0.378718764,-0.270187497,-0.121031247,-0.0125000002,0.140562505,0.249093756,-0.138218746,0.0109374998,0.119468749,0.228,
    -0.369238973,-0.291047156,-0.132170528,-0.01741625,0.148880497,0.263634801,-0.145834669,0.00952632818,0.127796233,0.20598802,
    -0.368275374,-0.293518007,-0.14213641,-0.0344892852,0.1675497,0.271681219,-0.168795258,0.0159863625,0.126795962,0.2015533,
    -0.358804911,-0.300531566,-0.169322997,-0.0449176244,0.175839081,0.290050745,-0.18938382,0.00843382441,0.135682419,0.193955734,
    -0.358557522,-0.292646021,-0.193714723,-0.0683454126,0.191657901,0.300827801,-0.224703312,0.00725774514,0.135181665,0.201093137,
    -0.350439161,-0.29244861,-0.200814486,-0.0893996656,0.194558591,0.320938647,-0.257092863,-0.00927274209,0.140998289,0.19898881,
    0.314471513,0.462448746,0.712562621,0.711095273,0.759626448,0.985849202,1.13382649,0.326325148,0.415665478,0.563218415,0.789441228,0.937418699,0.87211293,1.05048072,0.366810501,0.593033373,0.591566086,0.606252789,0.854072809,1.03818834,1.07458162},
  /* sgd_nesterov_wd */ {
    -0.379198492,-0.271923989,-0.1207745,-0.0134999994,0.141868249,0.249142751,-0.139337003,0.0118124997,0.119087003,0.226361498,
    -0.365483314,-0.283079505,-0.136984333,-0.0107055204,0.141108185,0.267387003,-0.139364585,0.00251186243,0.133009419,0.215413228,
    -0.370531797,-0.271088898,-0.142072693,-0.0270321835,0.156995922,0.267817676,-0.161038712,0.0103527494,0.126893029,0.226335913,
    -0.360309333,-0.276019812,-0.1680765,-0.0274360608,0.153576016,0.284279168,-0.169747666,-0.00353128859,0.138308764,0.222598255,
    -0.3667458,-0.260456145,-0.179123878,-0.0472583286,0.165460572,0.284689456,-0.196959525,-0.000763080432,0.132061929,0.238351539,
    -0.35810256,-0.263935268,-0.170237392,-0.0556142516,0.156962961,0.300665379,-0.210566208,-0.0201110579,0.13915439,0.233321637,
    0.32219395,0.480692148,0.671914518,0.740505874,0.805302441,0.980961978,1.13946009,0.359872192,0.452802777,0.589547992,0.76520741,0.923705637,0.936713278,1.06769574,0.373793483,0.54945296,0.618044257,0.661486149,0.851941288,1.03256142,1.11193287},
  /* sgd_momentum_f64 */ {
    -0.37853124999999999,-0.27006249999999998,-0.12096875,-0.012500000000000001,0.14050000000000001,0.24896874999999999,-0.13815625000000001,0.010937500000000001,0.11940625000000001,0.22787499999999999,
    -0.37087860156249997,-0.29025995312499997,-0.12955458593749999,-0.018467187499999999,0.149657125,0.26074452343749999,-0.14637763281250002,0.011398046875000001,0.1254151328125,0.20603378124999999,
    -0.37015837151757808,-0.29474340347265621,-0.13718467234179688,-0.034370680859375002,0.16716129465625001,0.26704559863867189,-0.16714365661914066,0.018249303027343754,0.12369781599414062,0.19911278403906249,
    -0.36220129569851023,-0.30265901373294235,-0.15918323660140771,-0.04455648437216797,0.17575842637588282,0.2818912821207476,-0.18570772030265287,0.013268934087182622,0.13026258249562159,0.18980486446118944,
    -0.36179952648957525,-0.29783731870690017,-0.17886255700760642,-0.065409040170402513,0.19039527610377044,0.29035347879302514,-0.21633859682758688,0.013464150340472216,0.12904192541008272,0.1930041331927578,
    -0.35472127205666659,-0.29913379019443204,-0.18413511095542956,-0.084127283608685807,0.19405064440179148,0.30654075318898016,-0.2443300692524068,0.00073912185567749471,0.13311999008904019,0.18870747195127477,
    0.32837759835766345,0.45885417570440717,0.70582765769911027,0.71192383050681607,0.76255690105478091,0.98963962360331015,1.120116200950054,0.31529968253488383,0.42839407088726733,0.56151063513640409,0.78859335768493344,0.91906993503167711,0.87198592846232992,1.0591873461329142,0.36046436921802727,0.5875470917665564,0.59364326457426231,0.61307188910645316,0.85814108021453739,1.0217263944636741,1.0593274077663535},
  /* adam_default */ {
    -0.375999987,-0.250999987,-0.123999998,-0.000999999931,0.126000002,0.248999998,-0.126000002,0.000999999815,0.123999998,0.248999998,
    -0.375462234,-0.251775444,-0.12456879,-0.00121897599,0.126345605,0.249712959,-0.12638405,0.000880969747,0.124466754,0.248254448,
    -0.375428349,-0.251805812,-0.125008464,-0.00178723247,0.126941144,0.250044554,-0.12707004,0.00109298294,0.12445128,0.248193994,
    -0.375122428,-0.251944453,-0.125685692,-0.00208353437,0.127148926,0.250598818,-0.127631962,0.000867430586,0.124737665,0.248064339,
    -0.375127763,-0.251779348,-0.126258105,-0.00261147926,0.127517909,0.250899881,-0.128345281,0.000821301655,0.124740191,0.248233289,
    -0.374938071,-0.25176543,-0.126401097,-0.00306649948,0.127566516,0.251369357,-0.128973678,0.000489997386,0.124892972,0.24822703,
    0.374311328,0.498327464,0.62815088,0.748711944,0.871550977,1.00060236,1.12500787,0.373277575,0.498589694,0.622787356,0.751922488,0.876421154,0.99660331,1.12404633,0.374289423,0.503049612,0.6248281,0.74614501,0.875373065,1.00072575,1.1232872},
  /* adam_lr_wd */ {
    -0.38499999,-0.25999999,-0.115000002,-0.00999999978,0.135000005,0.24000001,-0.135000005,0.00999999885,0.115000002,0.239999995,
    -0.378462017,-0.267379582,-0.120311402,-0.0121601019,0.137962669,0.246537969,-0.138264835,0.00879003759,0.119213387,0.232249066,
    -0.376249671,-0.266857207,-0.124181055,-0.0178160332,0.143542364,0.248750314,-0.144836023,0.0108782807,0.118497804,0.230920359,
    -0.371575445,-0.267308563,-0.130672678,-0.0207276177,0.145045891,0.253424555,-0.150025174,0.00859425031,0.120831572,0.228826791,
    -0.369719416,-0.264766842,-0.136018917,-0.0259631127,0.148179382,0.255280584,-0.156872064,0.00809732545,0.120284818,0.229699552,
    -0.366039246,-0.263648659,-0.136958927,-0.0304492377,0.148045555,0.258960754,-0.162772626,0.00475709047,0.121216744,0.228791773,
    0.36141336,0.471286803,0.644162834,0.716733694,0.829693556,0.98641336,1.09628677,0.352183938,0.479290485,0.590705991,0.753191292,0.868586659,0.956618667,1.09971464,0.358903676,0.521461785,0.594224155,0.703887641,0.860937953,0.983903766,1.09201264},
  /* adam_amsgrad */ {
    -0.394999743,-0.269999951,-0.105000257,-0.0199999195,0.144999936,0.230001271,-0.144999921,0.0199999083,0.105000183,0.230000049,
    -0.383249342,-0.284849495,-0.117347062,-0.0232568346,0.150846407,0.245089963,-0.151637256,0.0164534263,0.115379162,0.215791911,
    -0.38311851,-0.283564836,-0.12624903,-0.0348691083,0.162709966,0.251206398,-0.165744722,0.0207027681,0.114607759,0.216460139,
    -0.376473099,-0.285269827,-0.140987664,-0.0398756489,0.165443555,0.262749135,-0.176489487,0.0148240514,0.121023253,0.215082437,
    -0.37757054,-0.279915333,-0.152535215,-0.0509895384,0.172471389,0.267839313,-0.191451803,0.0137208449,0.120302901,0.220600814,
    -0.373457372,-0.278921813,-0.153402075,-0.0598421171,0.171494976,0.277515471,-0.203719392,0.00542555656,0.123583198,0.221115649,
    0.35660404,0.46770969,0.683453321,0.728521883,0.80690074,1.00707698,1.12608492,0.34714359,0.471925586,0.581564486,0.783485353,0.904096663,0.937124372,1.10210001,0.361418009,0.556386232,0.62556076,0.673858047,0.878222942,1.0149076,1.09711862},
  /* adam_amsgrad_f64 */ {
    -0.39499966316356777,-0.26999994920647818,-0.10500023703422774,-0.019999920000320002,0.14499993469409078,0.23000071108582806,-0.14499992289186356,0.019999908571846525,0.105000172971477,0.23000004444434569,
    -0.38204620782502507,-0.28445019358955687,-0.11699855507377352,-0.023196461438369953,0.1503201576189177,0.24456178853925525,-0.15102330689818602,0.016414304996638197,0.1149559228803838,0.21547697966713483,
    -0.3799756528404753,-0.28230318260410353,-0.12540155810225595,-0.034752942618617513,0.16178463395162399,0.24960700910857711,-0.16483396743395459,0.020598842530664171,0.11364901711821648,0.21543343366057352,
    -0.37163399744491865,-0.28302359130636667,-0.13988712829685265,-0.039651537618191207,0.16388243013543061,0.26033592239751274,-0.1751047098554607,0.014665039405095615,0.11956365332198299,0.21327873433741576,
    -0.37076725447769754,-0.27673910227126719,-0.15105880446647157,-0.050672599856955977,0.17029170642872529,0.26427308221555029,-0.18976276585019031,0.013493408593790498,0.1182905258996044,0.21802849584800543,
    -0.36480135650027418,-0.27471290638182772,-0.15140762023227369,-0.059386697827332427,0.16861554759907407,0.27296078017476016,-0.20157847754688579,0.0051503694716658853,0.12099316980183199,0.21773793559129681,
    0.34973725499771496,0.45540004956519625,0.67142724737824033,0.69774866032915739,0.79456705611417078,0.9862128594098909,1.0964394837304785,0.34153678056872211,0.46494248558108164,0.56874608356713741,0.7674386803769041,0.88551019465301195,0.92636379037200878,1.0840521081537229,0.35259534098289325,0.54736966531475217,0.59608562747784022,0.66542883405201059,0.8592305095622631,0.99267977806015306,1.079895868501314},
  /* adamw_default */ {
    -0.375996232,-0.250997484,-0.123998746,-0.000999999931,0.12599875,0.248997495,-0.12599875,0.000999999815,0.123998746,0.248997495,
    -0.375454724,-0.251770437,-0.124566294,-0.00121896598,0.126343086,0.249707967,-0.126381531,0.000880959735,0.124464259,0.248249456,
    -0.375417084,-0.251798272,-0.125004724,-0.00178721023,0.12693736,0.250037074,-0.127066255,0.00109296408,0.124447539,0.248186514,
    -0.375107408,-0.251934379,-0.1256807,-0.0020834941,0.127143875,0.250588834,-0.127626911,0.000867400784,0.124732681,0.24805437,
    -0.375108987,-0.251766741,-0.126251861,-0.00261141802,0.127511591,0.250887394,-0.128338948,0.00082126318,0.124733955,0.248220831,
    -0.37491554,-0.25175029,-0.126393586,-0.00306641217,0.127558917,0.251354367,-0.128966063,0.000489950704,0.124885485,0.248212084,
    0.374288797,0.498297453,0.628113329,0.748666883,0.871498406,1.00054228,1.12494063,0.373255163,0.498559654,0.622749805,0.751877427,0.876368582,0.996543348,1.12397873,0.374266893,0.503019571,0.624790549,0.746100008,0.875320494,1.00066566,1.12321997},
  /* adamw_amsgrad */ {
    -0.384624988,-0.259750009,-0.114875011,-0.00999999791,0.134875,0.239750072,-0.134875,0.00999999605,0.114875011,0.239749998,
    -0.378619969,-0.267083883,-0.120685019,-0.0119067635,0.137936965,0.246842653,-0.138326719,0.00851603784,0.119682208,0.232226193,
    -0.378027946,-0.266659707,-0.124994472,-0.017631188,0.143736303,0.249793544,-0.145137429,0.0106219826,0.119303048,0.231846929,
    -0.374463439,-0.267505378,-0.131934151,-0.0203532185,0.145324066,0.255197138,-0.150491431,0.00802250579,0.122214295,0.230628356,
    -0.37437433,-0.265076369,-0.137563795,-0.0257371441,0.148769394,0.257734567,-0.157637596,0.00749506801,0.121939711,0.232619643,
    -0.372031599,-0.264468223,-0.138393104,-0.0302001704,0.148629591,0.26223579,-0.16369617,0.00376554811,0.123397619,0.232511967,
    0.364691675,0.480634719,0.651535988,0.733712614,0.835589886,0.998749793,1.11861145,0.357269078,0.482901096,0.599409759,0.763424337,0.88415134,0.961396456,1.10776138,0.365852922,0.526260972,0.620500147,0.70729506,0.872397661,1.00139153,1.10281646},
  /* adamw_no_wd */ {
    -0.38499999,-0.25999999,-0.115000002,-0.00999999978,0.135000005,0.24000001,-0.135000005,0.00999999885,0.115000002,0.239999995,
    -0.37962237,-0.267754644,-0.120687947,-0.0121897599,0.138456061,0.247129604,-0.138840497,0.00880969781,0.119667567,0.232544437,
    -0.379283369,-0.2680583,-0.125084743,-0.0178723261,0.14441143,0.250445634,-0.145700365,0.0109298304,0.119512804,0.231939837,
    -0.37622425,-0.269444823,-0.131856963,-0.0208353437,0.146489218,0.255988419,-0.151319548,0.0086743068,0.122376651,0.230643243,
    -0.376277506,-0.267793685,-0.137581035,-0.0261147916,0.150179088,0.258999109,-0.158452719,0.00821301807,0.122401908,0.232332751,
    -0.374380499,-0.267654479,-0.139011011,-0.0306649935,0.150665119,0.263694018,-0.164736643,0.00489997491,0.123929702,0.232270181,
    0.368113548,0.483274579,0.656508744,0.737120032,0.840508938,1.00602341,1.12507975,0.35777542,0.485896885,0.602873564,0.769224226,0.889211416,0.966032445,1.11546326,0.367894322,0.530496418,0.623280764,0.711450517,0.878730416,1.00725687,1.10787117},
};
/* clang-format on */

/* The same two formulas as tools/optim_ref.cpp; all values are exact in float. */
static double init_value(int k, int64_t i) { return (double)(i % 7 - 3) / 8.0 + (double)k / 4.0; }
static double grad_value(int k, int64_t i, int t) {
  return (double)((i * 5 + k * 3 + t * 7) % 13 - 6) / 16.0 + (double)((t * (i + 1)) % 5) / 64.0;
}

/* Parameter k (t == 0) or its gradient at step t, as a new float32/float64 tensor. */
static disp_tensor *filled(int k, int t, int f64) {
  int64_t sizes[2] = {2, 3}, n = kNumel[k];
  if (k != 0) sizes[0] = n;
  disp_tensor *x = NULL;
  if (disp_tensor_empty(sizes, k == 0 ? 2 : 1, f64 ? DISP_DTYPE_FLOAT64 : DISP_DTYPE_FLOAT32,
                        disp_device_make(DISP_BACKEND_CPU, -1), &x) != DISP_OK)
    return NULL;
  for (int64_t i = 0; i < n; ++i) {
    double v = t == 0 ? init_value(k, i) : grad_value(k, i, t);
    if (f64) ((double *)disp_tensor_data_ptr(x))[i] = v;
    else ((float *)disp_tensor_data_ptr(x))[i] = (float)v;
  }
  return x;
}

static double value_at(disp_tensor *x, int64_t i) {
  return disp_tensor_dtype(x) == DISP_DTYPE_FLOAT64 ? ((double *)disp_tensor_data_ptr(x))[i]
                                                    : ((float *)disp_tensor_data_ptr(x))[i];
}

/* Distance in units in the last place of the dtype (floats of one sign: the tests' values). */
static int64_t ulps(double got, double want, int f64) {
  if (got == want) return 0;
  if ((got < 0) != (want < 0)) return INT64_MAX;
  if (f64) {
    int64_t a, b;
    memcpy(&a, &got, 8), memcpy(&b, &want, 8);
    return a > b ? a - b : b - a;
  }
  float gf = (float)got, wf = (float)want;
  int32_t a, b;
  memcpy(&a, &gf, 4), memcpy(&b, &wf, 4);
  return a > b ? (int64_t)a - b : (int64_t)b - a;
}

static disp_status make_optimizer(const config *c, disp_tensor **ps, disp_optimizer **opt) {
  if (c->kind == SGD) {
    disp_sgd_options o = disp_sgd_options_default();
    o.lr = c->lr, o.momentum = c->momentum, o.dampening = c->dampening;
    o.weight_decay = c->weight_decay, o.nesterov = c->nesterov;
    return disp_optim_sgd_new(ps, 4, &o, opt);
  }
  disp_adam_options o = c->kind == ADAM ? disp_adam_options_default() : disp_adamw_options_default();
  o.lr = c->lr, o.beta1 = c->beta1, o.beta2 = c->beta2, o.eps = c->eps;
  o.weight_decay = c->weight_decay, o.amsgrad = c->amsgrad;
  return (c->kind == ADAM ? disp_optim_adam_new : disp_optim_adamw_new)(ps, 4, &o, opt);
}

static void release_all(disp_tensor **ps, int n) {
  for (int k = 0; k < n; ++k) disp_tensor_release(ps[k]);
}

/* Gives every parameter but p2 its gradient of step t. */
static disp_status set_grads(disp_tensor **ps, int t, int f64) {
  for (int k = 0; k < 4; ++k) {
    if (k == 2) continue;
    disp_tensor *g = filled(k, t, f64);
    disp_status st = g ? disp_tensor_set_grad(ps[k], g) : DISP_ERR_NO_MEMORY;
    disp_tensor_release(g);
    if (st != DISP_OK) return st;
  }
  return DISP_OK;
}

/*
 * Runs configuration c and compares every value with kRef; *worst gets the
 * largest difference in ulps.
 */
static int run_config(const config *c, const double *ref, int64_t *worst) {
  disp_tensor *ps[4];
  for (int k = 0; k < 4; ++k) {
    ps[k] = filled(k, 0, c->f64);
    ASSERT_TRUE(ps[k] != NULL);
    ASSERT_OK(disp_tensor_set_requires_grad(ps[k], 1));
  }
  disp_optimizer *opt = NULL;
  ASSERT_OK(make_optimizer(c, ps, &opt));
  *worst = 0;
  int64_t r = 0;
  for (int t = 1; t <= NSTEPS; ++t) {
    ASSERT_OK(set_grads(ps, t, c->f64));
    ASSERT_OK(disp_optim_step(opt));
    for (int k = 0; k < 2; ++k)
      for (int64_t i = 0; i < kNumel[k]; ++i, ++r) {
        int64_t u = ulps(value_at(ps[k], i), ref[r], c->f64);
        if (u > *worst) *worst = u;
      }
  }
  for (int64_t i = 0; i < kNumel[3]; ++i, ++r) {
    int64_t u = ulps(value_at(ps[3], i), ref[r], c->f64);
    if (u > *worst) *worst = u;
  }
  /* p2 never had a gradient: unchanged, no state */
  for (int64_t i = 0; i < kNumel[2]; ++i) ASSERT_TRUE(value_at(ps[2], i) == init_value(2, i));
  disp_tensor *state = NULL;
  ASSERT_OK(disp_optim_state(opt, 2, c->kind == SGD ? "momentum_buffer" : "exp_avg", &state, NULL));
  ASSERT_TRUE(state == NULL);
  disp_optim_free(opt);
  release_all(ps, 4);
  return 0;
}

TEST(matches_libtorch) {
  printf("  update loops for CPU capability %s\n", disp_cpu_capability());
  for (size_t i = 0; i < NCONFIGS; ++i) {
    int64_t worst = -1;
    if (run_config(&kConfigs[i], kRef[i], &worst) != 0) TEST_FAIL_("configuration %s failed", kConfigs[i].name);
    printf("  %-18s largest difference from libtorch: %lld ulp\n", kConfigs[i].name, (long long)worst);
    if (worst > MAX_ULPS) TEST_FAIL_("%s: %lld ulp from libtorch", kConfigs[i].name, (long long)worst);
  }
  return 0;
}

/* One float32 parameter [3] holding 1, 2, 3 (requires grad). */
static disp_tensor *param3(void) {
  int64_t n = 3;
  disp_tensor *x = NULL;
  if (disp_tensor_empty(&n, 1, DISP_DTYPE_FLOAT32, disp_device_make(DISP_BACKEND_CPU, -1), &x) != DISP_OK) return NULL;
  for (int i = 0; i < 3; ++i) ((float *)disp_tensor_data_ptr(x))[i] = (float)(i + 1);
  if (disp_tensor_set_requires_grad(x, 1) != DISP_OK) {
    disp_tensor_release(x);
    return NULL;
  }
  return x;
}

/* disp_optim_sgd_new's message for options o; NULL when it succeeded. */
static const char *sgd_error(disp_sgd_options o) {
  disp_tensor *p = param3();
  disp_optimizer *opt = NULL;
  disp_status st = disp_optim_sgd_new(&p, 1, &o, &opt);
  disp_optim_free(opt);
  disp_tensor_release(p);
  return st == DISP_OK ? NULL : disp_last_error();
}

static const char *adam_error(disp_adam_options o, int adamw) {
  disp_tensor *p = param3();
  disp_optimizer *opt = NULL;
  disp_status st = (adamw ? disp_optim_adamw_new : disp_optim_adam_new)(&p, 1, &o, &opt);
  disp_optim_free(opt);
  disp_tensor_release(p);
  return st == DISP_OK ? NULL : disp_last_error();
}

TEST(sgd_option_errors) {
  disp_sgd_options o = disp_sgd_options_default();
  ASSERT_TRUE(isnan(o.lr));
  ASSERT_TRUE(o.momentum == 0 && o.dampening == 0 && o.weight_decay == 0 && !o.nesterov && !o.maximize);
  ASSERT_EQ_STR(sgd_error(o), "parameter group didn't specify a value of required optimization parameter lr");
  o.lr = -1.0;
  ASSERT_EQ_STR(sgd_error(o), "Invalid learning rate: -1.0");
  o.lr = 0.1, o.momentum = -0.5;
  ASSERT_EQ_STR(sgd_error(o), "Invalid momentum value: -0.5");
  o.momentum = 0, o.weight_decay = -1e-5;
  ASSERT_EQ_STR(sgd_error(o), "Invalid weight_decay value: -1e-05");
  o.weight_decay = 0, o.nesterov = 1;
  ASSERT_EQ_STR(sgd_error(o), "Nesterov momentum requires a momentum and zero dampening");
  o.momentum = 0.9, o.dampening = 0.1;
  ASSERT_EQ_STR(sgd_error(o), "Nesterov momentum requires a momentum and zero dampening");
  o.dampening = 0;
  ASSERT_TRUE(sgd_error(o) == NULL);
  return 0;
}

TEST(adam_option_errors) {
  disp_adam_options o = disp_adam_options_default(), w = disp_adamw_options_default();
  ASSERT_TRUE(o.lr == 1e-3 && o.beta1 == 0.9 && o.beta2 == 0.999 && o.eps == 1e-8 && o.weight_decay == 0);
  ASSERT_TRUE(w.weight_decay == 1e-2 && w.lr == 1e-3 && !w.amsgrad && !w.maximize);
  for (int adamw = 0; adamw < 2; ++adamw) {
    disp_adam_options b = adamw ? w : o, x = b;
    x.lr = -1.0;
    ASSERT_EQ_STR(adam_error(x, adamw), "Invalid learning rate: -1.0");
    x = b, x.lr = NAN;
    ASSERT_EQ_STR(adam_error(x, adamw), "Invalid learning rate: nan");
    x = b, x.eps = -1e-8;
    ASSERT_EQ_STR(adam_error(x, adamw), "Invalid epsilon value: -1e-08");
    x = b, x.beta1 = 1.0;
    ASSERT_EQ_STR(adam_error(x, adamw), "Invalid beta parameter at index 0: 1.0");
    x = b, x.beta2 = -0.25;
    ASSERT_EQ_STR(adam_error(x, adamw), "Invalid beta parameter at index 1: -0.25");
    x = b, x.weight_decay = -12345.5;
    ASSERT_EQ_STR(adam_error(x, adamw), "Invalid weight_decay value: -12345.5");
    x = b, x.lr = -1e16;
    ASSERT_EQ_STR(adam_error(x, adamw), "Invalid learning rate: -1e+16");
    x = b, x.lr = -123456789012345.0;
    ASSERT_EQ_STR(adam_error(x, adamw), "Invalid learning rate: -123456789012345.0");
    x = b, x.lr = -0.0001;
    ASSERT_EQ_STR(adam_error(x, adamw), "Invalid learning rate: -0.0001");
    ASSERT_TRUE(adam_error(b, adamw) == NULL);
  }
  return 0;
}

TEST(parameter_list_errors) {
  disp_adam_options o = disp_adam_options_default();
  disp_optimizer *opt = NULL;
  disp_tensor *p = param3(), *none[2] = {p, NULL};
  ASSERT_STATUS(disp_optim_adam_new(&p, 0, &o, &opt), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "optimizer got an empty parameter list");
  ASSERT_STATUS(disp_optim_adam_new(none, 2, &o, &opt), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_optim_adam_new: params[1] is NULL");
  /* what the loops cannot update is refused up front, naming the parameter */
  int64_t sizes[2] = {2, 3}, tstrides[2] = {1, 2};
  disp_tensor *i64 = NULL, *tr = NULL, *meta = NULL;
  ASSERT_OK(disp_tensor_empty(sizes, 2, DISP_DTYPE_INT64, disp_device_make(DISP_BACKEND_CPU, -1), &i64));
  ASSERT_OK(disp_tensor_empty_strided(sizes, tstrides, 2, DISP_DTYPE_FLOAT32, disp_device_make(DISP_BACKEND_CPU, -1), &tr));
  /* other devices take any floating dtype (tests/test_optim_device.c), not integers */
  ASSERT_OK(disp_tensor_empty(sizes, 2, DISP_DTYPE_INT64, disp_device_make(DISP_BACKEND_META, -1), &meta));
  disp_tensor *bad[3][2] = {{p, i64}, {p, tr}, {p, meta}};
  const char *want[3] = {"parameter 1 is a int64 tensor on cpu", "parameter 1 is a non-contiguous float32 tensor on cpu",
                         "parameter 1 is a int64 tensor on meta"};
  for (int k = 0; k < 3; ++k) {
    ASSERT_STATUS(disp_optim_adam_new(bad[k], 2, &o, &opt), DISP_ERR_INVALID_ARG);
    ASSERT_CONTAINS(disp_last_error(), want[k]);
    ASSERT_CONTAINS(disp_last_error(), "dense contiguous float32 or float64 CPU tensors and dense floating-point "
                                       "tensors of other devices");
  }
  ASSERT_TRUE(opt == NULL);
  ASSERT_EQ_INT(disp_tensor_refcount(p), 1);
  /* the optimizer retains its parameters, and lets go when freed */
  ASSERT_OK(disp_optim_adam_new(&p, 1, &o, &opt));
  ASSERT_EQ_INT(disp_tensor_refcount(p), 2);
  ASSERT_EQ_INT(disp_optim_param_count(opt), 1);
  disp_optim_free(opt);
  ASSERT_EQ_INT(disp_tensor_refcount(p), 1);
  disp_tensor_release(i64), disp_tensor_release(tr), disp_tensor_release(meta), disp_tensor_release(p);
  return 0;
}

static char warned[512];
static void keep_warning(const char *message, void *user_data) {
  (void)user_data;
  snprintf(warned, sizeof warned, "%s", message);
}

TEST(duplicate_parameters_warn) {
  disp_tensor *a = param3(), *twice[2] = {a, a};
  disp_sgd_options o = disp_sgd_options_default();
  o.lr = 0.5;
  disp_optimizer *opt = NULL;
  warned[0] = '\0';
  disp_warning_handler old = disp_set_warning_handler(keep_warning, NULL);
  ASSERT_OK(disp_optim_sgd_new(twice, 2, &o, &opt));
  disp_set_warning_handler(old, NULL);
  ASSERT_EQ_STR(warned, "optimizer contains a parameter group with duplicate parameters; in future, this will cause "
                        "an error; see github.com/pytorch/pytorch/issues/40967 for more information");
  disp_optim_free(opt);
  disp_tensor_release(a);
  return 0;
}

/* A float32 gradient [3] holding v, v, v. */
static disp_tensor *grad3(float v) {
  int64_t n = 3;
  disp_tensor *x = NULL;
  if (disp_tensor_empty(&n, 1, DISP_DTYPE_FLOAT32, disp_device_make(DISP_BACKEND_CPU, -1), &x) != DISP_OK) return NULL;
  for (int i = 0; i < 3; ++i) ((float *)disp_tensor_data_ptr(x))[i] = v;
  return x;
}

static int give_grad(disp_tensor *p, float v) {
  disp_tensor *g = grad3(v);
  disp_status st = g ? disp_tensor_set_grad(p, g) : DISP_ERR_NO_MEMORY;
  disp_tensor_release(g);
  return st == DISP_OK;
}

TEST(state_is_lazy_and_skipped_params_untouched) {
  disp_tensor *a = param3(), *b = param3(), *ps[2] = {a, b};
  disp_adam_options o = disp_adam_options_default();
  o.amsgrad = 1;
  disp_optimizer *opt = NULL;
  ASSERT_OK(disp_optim_adam_new(ps, 2, &o, &opt));
  disp_tensor *s = NULL;
  int64_t step = -1;
  ASSERT_OK(disp_optim_state(opt, 0, "exp_avg", &s, &step));
  ASSERT_TRUE(s == NULL && step == 0);
  /* a step with no gradient anywhere changes nothing */
  uint64_t va = disp_tensor_version(a);
  ASSERT_OK(disp_optim_step(opt));
  ASSERT_EQ_INT(disp_tensor_version(a), va);
  ASSERT_TRUE(((float *)disp_tensor_data_ptr(a))[0] == 1.0f);
  ASSERT_TRUE(give_grad(a, 0.5f));
  ASSERT_OK(disp_optim_step(opt));
  ASSERT_OK(disp_optim_step(opt));
  ASSERT_EQ_INT(disp_tensor_version(a), va + 2); /* one addcdiv_ a step */
  const char *names[3] = {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
  for (int k = 0; k < 3; ++k) {
    ASSERT_OK(disp_optim_state(opt, 0, names[k], &s, &step));
    ASSERT_TRUE(s != NULL && step == 2);
    ASSERT_TRUE(!disp_tensor_requires_grad(s));
    ASSERT_OK(disp_optim_state(opt, 1, names[k], &s, &step));
    ASSERT_TRUE(s == NULL && step == 0);
  }
  /* b had no gradient: untouched */
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(((float *)disp_tensor_data_ptr(b))[i] == (float)(i + 1));
  ASSERT_STATUS(disp_optim_state(opt, 0, "momentum_buffer", &s, NULL), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_optim_state: Adam has no state named 'momentum_buffer'");
  ASSERT_STATUS(disp_optim_state(opt, 2, "exp_avg", &s, NULL), DISP_ERR_INVALID_ARG);
  disp_optim_free(opt);
  disp_tensor_release(a), disp_tensor_release(b);
  return 0;
}

TEST(adamw_bumps_twice_sgd_once) {
  disp_tensor *a = param3();
  ASSERT_TRUE(give_grad(a, 1.0f));
  disp_adam_options o = disp_adamw_options_default();
  disp_sgd_options so = disp_sgd_options_default();
  so.lr = 0.5, so.momentum = 0.5;
  disp_optimizer *w = NULL, *sgd = NULL;
  ASSERT_OK(disp_optim_adamw_new(&a, 1, &o, &w));
  ASSERT_OK(disp_optim_sgd_new(&a, 1, &so, &sgd));
  uint64_t v = disp_tensor_version(a);
  ASSERT_OK(disp_optim_step(w));
  ASSERT_EQ_INT(disp_tensor_version(a), v + 2);
  ASSERT_OK(disp_optim_step(sgd));
  ASSERT_EQ_INT(disp_tensor_version(a), v + 3);
  disp_tensor *buf = NULL;
  int64_t step = -1;
  ASSERT_OK(disp_optim_state(sgd, 0, "momentum_buffer", &buf, &step));
  ASSERT_TRUE(buf != NULL && step == 0);
  ASSERT_TRUE(((float *)disp_tensor_data_ptr(buf))[1] == 1.0f); /* first step: a clone of the gradient */
  disp_optim_free(w), disp_optim_free(sgd);
  disp_tensor_release(a);
  return 0;
}

/* maximize with gradient g is minimize with -g, bit for bit (negation is exact). */
TEST(maximize_is_minimizing_the_negation) {
  disp_tensor *a = param3(), *b = param3();
  disp_adam_options o = disp_adam_options_default();
  o.weight_decay = 0.1, o.lr = 0.1;
  disp_sgd_options so = disp_sgd_options_default();
  so.lr = 0.1, so.momentum = 0.9, so.nesterov = 1, so.weight_decay = 0.01;
  for (int kind = 0; kind < 2; ++kind) {
    disp_optimizer *oa = NULL, *ob = NULL;
    if (kind == 0) {
      o.maximize = 1;
      ASSERT_OK(disp_optim_adam_new(&a, 1, &o, &oa));
      o.maximize = 0;
      ASSERT_OK(disp_optim_adam_new(&b, 1, &o, &ob));
    } else {
      so.maximize = 1;
      ASSERT_OK(disp_optim_sgd_new(&a, 1, &so, &oa));
      so.maximize = 0;
      ASSERT_OK(disp_optim_sgd_new(&b, 1, &so, &ob));
    }
    for (int t = 1; t <= 3; ++t) {
      ASSERT_TRUE(give_grad(a, 0.25f * (float)t) && give_grad(b, -0.25f * (float)t));
      ASSERT_OK(disp_optim_step(oa));
      ASSERT_OK(disp_optim_step(ob));
    }
    ASSERT_TRUE(memcmp(disp_tensor_data_ptr(a), disp_tensor_data_ptr(b), 3 * sizeof(float)) == 0);
    ASSERT_TRUE(((float *)disp_tensor_data_ptr(a))[0] != 1.0f);
    disp_optim_free(oa), disp_optim_free(ob);
  }
  disp_tensor_release(a), disp_tensor_release(b);
  return 0;
}

TEST(zero_grad_both_ways) {
  disp_tensor *a = param3(), *b = param3(), *ps[2] = {a, b};
  disp_sgd_options o = disp_sgd_options_default();
  o.lr = 0.1;
  disp_optimizer *opt = NULL;
  ASSERT_OK(disp_optim_sgd_new(ps, 2, &o, &opt));
  ASSERT_TRUE(give_grad(a, 2.0f));
  disp_tensor *g = disp_tensor_grad(a);
  uint64_t vg = disp_tensor_version(g);
  ASSERT_OK(disp_optim_zero_grad(opt, 0)); /* b has no grad: left alone */
  ASSERT_TRUE(disp_tensor_grad(a) == g && disp_tensor_grad(b) == NULL);
  ASSERT_EQ_INT(disp_tensor_version(g), vg + 1);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(((float *)disp_tensor_data_ptr(g))[i] == 0.0f);
  ASSERT_OK(disp_optim_zero_grad(opt, 1));
  ASSERT_TRUE(disp_tensor_grad(a) == NULL && disp_tensor_grad(b) == NULL);
  ASSERT_OK(disp_optim_zero_grad(opt, 1));
  disp_optim_free(opt);
  disp_tensor_release(a), disp_tensor_release(b);
  return 0;
}

TEST(bad_gradients_update_nothing) {
  disp_tensor *a = param3(), *b = param3(), *ps[2] = {a, b};
  disp_adam_options o = disp_adam_options_default();
  disp_optimizer *opt = NULL;
  ASSERT_OK(disp_optim_adam_new(ps, 2, &o, &opt));
  ASSERT_TRUE(give_grad(a, 1.0f) && give_grad(b, 1.0f));
  /* b's gradient changes shape after set_grad checked it: the step refuses before touching a */
  int64_t four = 4;
  disp_tensor *r = NULL;
  ASSERT_OK(disp_aten_resize_(disp_tensor_grad(b), (disp_int_list){&four, 1}, -1, &r));
  disp_tensor_release(r);
  ASSERT_STATUS(disp_optim_step(opt), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "the gradient of parameter 1 differs from the parameter");
  ASSERT_TRUE(((float *)disp_tensor_data_ptr(a))[0] == 1.0f);
  disp_tensor *s = NULL;
  ASSERT_OK(disp_optim_state(opt, 0, "exp_avg", &s, NULL));
  ASSERT_TRUE(s == NULL);
  /* a float64 gradient is refused by set_grad itself */
  int64_t n = 3;
  disp_tensor *g64 = NULL;
  ASSERT_OK(disp_tensor_empty(&n, 1, DISP_DTYPE_FLOAT64, disp_device_make(DISP_BACKEND_CPU, -1), &g64));
  ASSERT_STATUS(disp_tensor_set_grad(b, g64), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "assigned grad has data of a different type");
  /* a non-contiguous gradient is read through a contiguous copy: every other element of [6] */
  int64_t six = 6, stride = 2;
  disp_tensor *base = NULL, *view = NULL;
  ASSERT_OK(disp_tensor_empty(&six, 1, DISP_DTYPE_FLOAT32, disp_device_make(DISP_BACKEND_CPU, -1), &base));
  for (int i = 0; i < 6; ++i) ((float *)disp_tensor_data_ptr(base))[i] = (float)i;
  ASSERT_OK(disp_tensor_new_view(base, &n, &stride, 1, 0, &view));
  ASSERT_FALSE(disp_tensor_is_contiguous(view));
  ASSERT_OK(disp_tensor_set_grad(b, view));
  disp_sgd_options so = disp_sgd_options_default();
  so.lr = 1.0;
  disp_optimizer *sgd = NULL;
  ASSERT_OK(disp_optim_sgd_new(&b, 1, &so, &sgd));
  ASSERT_OK(disp_optim_step(sgd));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(((float *)disp_tensor_data_ptr(b))[i] == (float)(i + 1) - (float)(2 * i));
  disp_optim_free(sgd);
  disp_tensor_release(view), disp_tensor_release(base);
  disp_tensor_release(g64);
  disp_optim_free(opt);
  disp_tensor_release(a), disp_tensor_release(b);
  return 0;
}

/* Issue 18, class 5: a parameter resized or made non-contiguous after its
 * state was made is refused at the step, naming the optimizer, the
 * parameter and the change, before anything is updated. */
TEST(parameters_changed_after_building_are_refused) {
  for (int kind = 0; kind < 2; kind++)
    for (int change = 0; change < 2; change++) {
      disp_tensor *a = param3(), *b = param3(), *ps[2] = {a, b};
      disp_optimizer *opt = NULL;
      disp_adam_options ao = disp_adam_options_default();
      disp_sgd_options so = disp_sgd_options_default();
      so.lr = 0.1, so.momentum = 0.9;
      if (kind) ASSERT_OK(disp_optim_sgd_new(ps, 2, &so, &opt));
      else ASSERT_OK(disp_optim_adam_new(ps, 2, &ao, &opt));
      ASSERT_TRUE(give_grad(a, 1.0f) && give_grad(b, 1.0f));
      ASSERT_OK(disp_optim_step(opt)); /* the state exists now */
      float a0 = ((float *)disp_tensor_data_ptr(a))[0];
      int64_t five = 5, three = 3, two = 2;
      if (change == 0) ASSERT_OK(disp_tensor_resize(b, &five, NULL, 1)); /* [5]: past the state */
      else ASSERT_OK(disp_tensor_resize(b, &three, &two, 1));             /* every other element */
      /* a gradient of b's new sizes, so only the parameter's change is wrong */
      disp_tensor *g = NULL;
      ASSERT_OK(disp_tensor_empty(change == 0 ? &five : &three, 1, DISP_DTYPE_FLOAT32,
                                  disp_device_make(DISP_BACKEND_CPU, -1), &g));
      for (int i = 0; i < (change == 0 ? 5 : 3); i++) ((float *)disp_tensor_data_ptr(g))[i] = 1.0f;
      ASSERT_OK(disp_tensor_set_grad(b, g));
      disp_tensor_release(g);
      ASSERT_STATUS(disp_optim_step(opt), DISP_ERR_INVALID_ARG);
      ASSERT_CONTAINS(disp_last_error(), kind ? "parameter 1 of this SGD optimizer changed"
                                              : "parameter 1 of this Adam optimizer changed");
      ASSERT_CONTAINS(disp_last_error(), change == 0 ? "its sizes are now [5], its state's [3]" : "non-contiguous");
      ASSERT_TRUE(((float *)disp_tensor_data_ptr(a))[0] == a0); /* nothing updated */
      disp_optim_free(opt);
      disp_tensor_release(a), disp_tensor_release(b);
    }
  return 0;
}

/* Building is not quadratic in the parameters: 100,000 distinct ones (the
 * pairwise duplicate check took 3.4 s; sorted, milliseconds), then a step. */
TEST(many_parameters_build_linearly) {
  enum { N = 100000 };
  disp_tensor **ps = calloc(N, sizeof *ps);
  ASSERT_TRUE(ps);
  int64_t one = 1;
  for (int i = 0; i < N; i++) {
    ASSERT_OK(disp_tensor_empty(&one, 1, DISP_DTYPE_FLOAT32, disp_device_make(DISP_BACKEND_CPU, -1), &ps[i]));
    ((float *)disp_tensor_data_ptr(ps[i]))[0] = 1.0f;
    ASSERT_OK(disp_tensor_set_requires_grad(ps[i], 1));
  }
  disp_sgd_options so = disp_sgd_options_default();
  so.lr = 0.5;
  disp_optimizer *opt = NULL;
  ASSERT_OK(disp_optim_sgd_new(ps, N, &so, &opt));
  ASSERT_EQ_INT(disp_optim_param_count(opt), N);
  disp_tensor *g = NULL;
  ASSERT_OK(disp_tensor_empty(&one, 1, DISP_DTYPE_FLOAT32, disp_device_make(DISP_BACKEND_CPU, -1), &g));
  ((float *)disp_tensor_data_ptr(g))[0] = 1.0f;
  ASSERT_OK(disp_tensor_set_grad(ps[N - 1], g));
  ASSERT_OK(disp_optim_step(opt));
  ASSERT_TRUE(((float *)disp_tensor_data_ptr(ps[N - 1]))[0] == 0.5f);
  disp_tensor_release(g);
  disp_optim_free(opt);
  for (int i = 0; i < N; i++) disp_tensor_release(ps[i]);
  free(ps);
  return 0;
}

TEST(set_lr_and_null_arguments) {
  disp_tensor *a = param3();
  disp_sgd_options o = disp_sgd_options_default();
  o.lr = 0.5;
  disp_optimizer *opt = NULL;
  ASSERT_OK(disp_optim_sgd_new(&a, 1, &o, &opt));
  ASSERT_TRUE(disp_optim_lr(opt) == 0.5);
  ASSERT_STATUS(disp_optim_set_lr(opt, -2.5), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "Invalid learning rate: -2.5");
  ASSERT_OK(disp_optim_set_lr(opt, 0.25));
  ASSERT_TRUE(give_grad(a, 2.0f));
  ASSERT_OK(disp_optim_step(opt));
  ASSERT_TRUE(((float *)disp_tensor_data_ptr(a))[0] == 0.5f);
  ASSERT_STATUS(disp_optim_step(NULL), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_optim_step: opt is NULL");
  ASSERT_STATUS(disp_optim_zero_grad(NULL, 0), DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(disp_optim_sgd_new(&a, 1, NULL, &opt), DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(disp_optim_sgd_new(NULL, 1, &o, &opt), DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(disp_optim_sgd_new(&a, 1, &o, NULL), DISP_ERR_INVALID_ARG);
  ASSERT_TRUE(isnan(disp_optim_lr(NULL)));
  ASSERT_EQ_INT(disp_optim_param_count(NULL), 0);
  disp_optim_free(NULL);
  disp_optim_free(opt);
  disp_tensor_release(a);
  return 0;
}

/* torch.maximum propagates NaN: with amsgrad a NaN gradient poisons max_exp_avg_sq for good,
 * in the vector loop (element 3) as in the tail (element 16). */
TEST(amsgrad_max_keeps_nan) {
  int64_t n = 17;
  disp_tensor *p = NULL, *g = NULL;
  ASSERT_OK(disp_tensor_empty(&n, 1, DISP_DTYPE_FLOAT32, disp_device_make(DISP_BACKEND_CPU, -1), &p));
  ASSERT_OK(disp_tensor_empty(&n, 1, DISP_DTYPE_FLOAT32, disp_device_make(DISP_BACKEND_CPU, -1), &g));
  float *pd = disp_tensor_data_ptr(p), *gd = disp_tensor_data_ptr(g);
  for (int i = 0; i < 17; ++i) pd[i] = 1.0f, gd[i] = 0.5f;
  gd[3] = gd[16] = NAN;
  ASSERT_OK(disp_tensor_set_grad(p, g));
  disp_adam_options o = disp_adam_options_default();
  o.amsgrad = 1;
  disp_optimizer *opt = NULL;
  ASSERT_OK(disp_optim_adam_new(&p, 1, &o, &opt));
  ASSERT_OK(disp_optim_step(opt));
  gd[3] = gd[16] = 0.5f;
  for (int t = 0; t < 3; ++t) ASSERT_OK(disp_optim_step(opt));
  disp_tensor *vmax = NULL;
  ASSERT_OK(disp_optim_state(opt, 0, "max_exp_avg_sq", &vmax, NULL));
  const float *vm = disp_tensor_data_ptr(vmax);
  for (int i = 0; i < 17; ++i) ASSERT_TRUE((i == 3 || i == 16) == (vm[i] != vm[i]));
  ASSERT_TRUE(pd[3] != pd[3] && pd[16] != pd[16] && pd[0] == pd[15] && pd[0] < 1.0f);
  disp_optim_free(opt);
  disp_tensor_release(p), disp_tensor_release(g);
  return 0;
}

/* Backward of loss = sum(w * w * x), recorded through the dispatcher: d loss / dw = 2 * w * x. */
static disp_status backward_of(disp_tensor *w, disp_tensor *x) {
  disp_tensor *y = NULL, *z = NULL, *loss = NULL;
  disp_status st = disp_aten_mul_Tensor(w, w, &y);
  if (st == DISP_OK) st = disp_aten_mul_Tensor(y, x, &z);
  if (st == DISP_OK) st = disp_aten_sum(z, -1, &loss);
  if (st == DISP_OK) st = disp_autograd_backward(&loss, 1, NULL, 0, 0);
  disp_tensor_release(y), disp_tensor_release(z), disp_tensor_release(loss);
  return st;
}

/* With the engine: the step records nothing, the parameter stays a leaf, gradients accumulate
 * until zero_grad; a gradient with a graph is detached by zero_grad. */
TEST(trains_with_backward) {
  disp_tensor *w = param3(), *x = grad3(2.0f);
  disp_sgd_options o = disp_sgd_options_default();
  o.lr = 0.0625;
  disp_optimizer *opt = NULL;
  ASSERT_OK(disp_optim_sgd_new(&w, 1, &o, &opt));
  ASSERT_OK(backward_of(w, x));
  ASSERT_OK(backward_of(w, x)); /* accumulates: 2 * 4 * w = 8, 16, 24 */
  ASSERT_TRUE(((float *)disp_tensor_data_ptr(disp_tensor_grad(w)))[2] == 24.0f);
  ASSERT_OK(disp_optim_step(opt));
  ASSERT_TRUE(((float *)disp_tensor_data_ptr(w))[0] == 0.5f && ((float *)disp_tensor_data_ptr(w))[2] == 1.5f);
  ASSERT_TRUE(disp_tensor_is_leaf(w) && disp_tensor_grad_fn(w) == NULL && disp_tensor_requires_grad(w));
  ASSERT_OK(disp_optim_zero_grad(opt, 0));
  ASSERT_TRUE(((float *)disp_tensor_data_ptr(disp_tensor_grad(w)))[1] == 0.0f);
  disp_optim_free(opt);
  opt = NULL;
  /* a gradient inside a graph (as create_graph makes them) is cut out of it by zero_grad */
  ASSERT_OK(disp_optim_sgd_new(&w, 1, &o, &opt));
  disp_tensor *v = param3(), *g = NULL;
  ASSERT_OK(disp_aten_mul_Tensor(v, v, &g));
  ASSERT_TRUE(disp_tensor_grad_fn(g) != NULL && disp_tensor_requires_grad(g));
  ASSERT_OK(disp_tensor_set_grad(w, g));
  ASSERT_OK(disp_optim_step(opt));
  ASSERT_TRUE(disp_tensor_is_leaf(w) && disp_tensor_grad_fn(w) == NULL);
  ASSERT_TRUE(((float *)disp_tensor_data_ptr(w))[2] == 1.5f - 0.0625f * 9.0f);
  ASSERT_OK(disp_optim_zero_grad(opt, 0));
  ASSERT_TRUE(disp_tensor_grad(w) == g && disp_tensor_grad_fn(g) == NULL && !disp_tensor_requires_grad(g));
  ASSERT_TRUE(((float *)disp_tensor_data_ptr(g))[0] == 0.0f);
  disp_tensor_release(g), disp_tensor_release(v);
  disp_optim_free(opt);
  disp_tensor_release(w), disp_tensor_release(x);
  return 0;
}

/* Copies every state of every parameter of `from` into `to` (whose
 * parameters are copies of from's), as a checkpoint's resume does. */
static disp_status copy_state(const config *c, disp_optimizer *from, disp_optimizer *to) {
  static const char *const names[] = {"momentum_buffer", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
  for (size_t i = 0; i < 4; i++)
    for (int k = c->kind == SGD ? 0 : 1; k < (c->kind == SGD ? 1 : c->amsgrad ? 4 : 3); k++) {
      disp_tensor *t = NULL;
      int64_t step = 0;
      disp_status st = disp_optim_state(from, i, names[k], &t, &step);
      if (st == DISP_OK && t) st = disp_optim_set_state(to, i, names[k], t, step);
      if (st != DISP_OK) return st;
    }
  return DISP_OK;
}

/* Resuming from restored state takes exactly the uninterrupted run's
 * steps: 3 steps, copy parameters and state into a second optimizer, 3 more
 * on both; every value equal. */
TEST(restored_state_resumes_exactly) {
  for (size_t ci = 0; ci < NCONFIGS; ci++) {
    const config *c = &kConfigs[ci];
    disp_tensor *a[4], *b[4];
    disp_optimizer *oa = NULL, *ob = NULL;
    for (int k = 0; k < 4; k++) a[k] = filled(k, 0, c->f64);
    ASSERT_OK(make_optimizer(c, a, &oa));
    for (int t = 1; t <= 3; t++) {
      ASSERT_OK(set_grads(a, t, c->f64));
      ASSERT_OK(disp_optim_step(oa));
    }
    for (int k = 0; k < 4; k++) ASSERT_OK(disp_aten_clone(a[k], -1, &b[k]));
    ASSERT_OK(make_optimizer(c, b, &ob));
    ASSERT_OK(copy_state(c, oa, ob));
    for (int t = 4; t <= 6; t++) {
      ASSERT_OK(set_grads(a, t, c->f64));
      ASSERT_OK(disp_optim_step(oa));
      ASSERT_OK(set_grads(b, t, c->f64));
      ASSERT_OK(disp_optim_step(ob));
    }
    for (int k = 0; k < 4; k++)
      for (int64_t i = 0; i < kNumel[k]; i++)
        if (value_at(a[k], i) != value_at(b[k], i)) {
          fprintf(stderr, "%s: parameter %d [%lld] %.17g after resuming, %.17g uninterrupted\n", c->name, k,
                  (long long)i, value_at(b[k], i), value_at(a[k], i));
          return 1;
        }
    disp_optim_free(oa), disp_optim_free(ob);
    release_all(a, 4), release_all(b, 4);
  }
  /* refusals leave the state as it was */
  disp_tensor *ps[4] = {filled(0, 0, 0), filled(1, 0, 0), filled(2, 0, 0), filled(3, 0, 0)}, *p = ps[0], *wrong = ps[1];
  disp_optimizer *o = NULL;
  ASSERT_OK(make_optimizer(&kConfigs[5], ps, &o));
  ASSERT_STATUS(disp_optim_set_state(o, 0, "exp_avg", wrong, 1), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "must have the parameter's sizes, dtype and device");
  ASSERT_STATUS(disp_optim_set_state(o, 0, "exp_avg", p, 0), DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(disp_optim_set_state(o, 0, "max_exp_avg_sq", p, 1), DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(disp_optim_set_state(o, 4, "exp_avg", p, 1), DISP_ERR_INVALID_ARG);
  disp_tensor *t = NULL;
  ASSERT_OK(disp_optim_state(o, 0, "exp_avg", &t, NULL));
  ASSERT_TRUE(t == NULL);
  disp_optim_free(o);
  release_all(ps, 4);
  return 0;
}

TEST_LIST = {
    TEST_ENTRY(matches_libtorch),
    TEST_ENTRY(restored_state_resumes_exactly),
    TEST_ENTRY(sgd_option_errors),
    TEST_ENTRY(adam_option_errors),
    TEST_ENTRY(parameter_list_errors),
    TEST_ENTRY(duplicate_parameters_warn),
    TEST_ENTRY(state_is_lazy_and_skipped_params_untouched),
    TEST_ENTRY(adamw_bumps_twice_sgd_once),
    TEST_ENTRY(maximize_is_minimizing_the_negation),
    TEST_ENTRY(zero_grad_both_ways),
    TEST_ENTRY(bad_gradients_update_nothing),
    TEST_ENTRY(set_lr_and_null_arguments),
    TEST_ENTRY(parameters_changed_after_building_are_refused),
    TEST_ENTRY(many_parameters_build_linearly),
    TEST_ENTRY(amsgrad_max_keeps_nan),
    TEST_ENTRY(trains_with_backward),
    TEST_END};
TEST_MAIN()
